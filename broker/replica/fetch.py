"""Reads from the local replicas (Kafka's ReplicaManager.fetchMessages), for consumers and
for followers up to the log end offset, with the long poll (Kafka's DelayedFetch) in the
replica manager's purgatory.

Records leave as file ranges the network server `os.sendfile`s. A read_committed consumer
reads up to the last stable offset and gets the aborted transactions of the range from the
aborted-transaction indexes, so it can drop their batches itself. A fetch that finds fewer than
`min_bytes` waits until enough data arrived or `max_wait_ms` passed: a follower's is woken by
every append, a consumer's only when the HW (what it may read) moves.

A follower's fetch is its acknowledgement: its fetch offset may move the HW and bring it back
into the ISR (`ReplicaManager.on_follower_fetch`); the leader's replication throttle holds back
a throttled follower outside the ISR; a fetcher whose log diverged from ours learns where ours
ends (KIP-595). Fetching from the closest replica (KIP-392): a consumer fetch with client
metadata may be served by a follower, up to the follower's HW (or LSO), and a leader with a
rack-aware `replica.selector.class` may answer it with a `preferred_read_replica` and no
records. Older consumer fetches and replica fetches are served by the leader only.

Results come in the Fetch response's partition shape, so the hot paths build each answer once.
"""

from __future__ import annotations

from typing import Any, Sequence

import trio

from broker.replica.fetch_read import FetchParams, empty_entry, read_pass
from broker.replica.manager import ReplicaManager, WaitKey, appended_key
from clients.protocol.messages.fetch import FetchRequestData

__all__ = ["FetchParams", "empty_entry", "fetch_messages"]


async def fetch_messages(replicas: ReplicaManager, params: FetchParams,
                         topics: Sequence[FetchRequestData.FetchTopic]) -> list[dict[str, Any]]:
    """Read `topics` (the Fetch request's topics: name and partitions with fetch offset,
    partition_max_bytes, epochs) and answer them in the response's shape, in request order;
    with fewer than `min_bytes` read, wait up to `max_wait_ms` for more."""
    max_wait_ms = params.max_wait_ms
    deadline = trio.current_time() + max(max_wait_ms, 0) / 1000
    keys: list[WaitKey] = [(t.topic, p.partition) for t in topics for p in t.partitions]
    if params.replica_id >= 0:
        # A follower reads up to the log end: it is woken by appends (and by leadership
        # changes, which notify the appended key too), not by a HW that moved alone; as
        # in Kafka, its next fetch carries the new HW.
        keys = [appended_key(key) for key in keys]  # type: ignore[arg-type]
    # A consumer is woken only when what it may read moves (the HW), not by each append.
    with replicas.purgatory.watch(keys, "Fetch") as waiter:
        result = read_pass(replicas, params, topics)
        while (max_wait_ms > 0 and result.total_bytes < params.min_bytes and not result.has_error
               and not result.has_divergence and keys):
            # A partition held back by the leader throttle is read again once the quota
            # allows, not only when the wait ends.
            wake = deadline if result.throttled_until is None else min(
                deadline, result.throttled_until)
            woken = await waiter.wait(wake)
            if not woken and wake >= deadline:
                break
            # Woken by notifications: only the partitions they name are read again (a
            # follower of many quiet partitions would otherwise read them all at every
            # append); a throttle's wake reads everything.
            moved = {key[:2] for key in waiter.take_fired()} if woken else None
            result = read_pass(replicas, params, topics, moved, result)
    return result.responses
