"""One read pass of a Fetch over the local replicas: every requested partition read once,
within the request's byte budgets, answered in the Fetch response's partition shape.

A partition is served by its leader, or for a consumer with client metadata also by a
follower (Kafka's fetchOnlyLeader false), whose reads stop at its own HW. An in-sync follower
at the log end, the usual case of most partitions of a follower's session, is answered from
the marks before anything else is looked up (`Partition.caught_up_fetch`).
"""

from __future__ import annotations

import logging
from typing import Any, Sequence

from trio import current_time as now

from broker.log.results import FileRange, ReadResult, UpperBound
from broker.replica.errors import PARTITION_ERRORS, NotLeaderOrFollower, error_code_of
from broker.replica.manager import ReplicaManager
from broker.replica.partition import Partition
from broker.replica.read_replica import NO_PREFERRED_REPLICA, preferred_read_replica
from clients.clock import wall_clock_ms
from clients.protocol import ErrorCode
from clients.protocol.messages.fetch import FetchRequestData

FetchTopic = FetchRequestData.FetchTopic
FetchPartition = FetchRequestData.FetchPartition

logger = logging.getLogger(__name__)

READ_COMMITTED = 1
_INT32_MAX = 2**31 - 1


class FetchParams:
    """What one Fetch asks of the replicas (Kafka's FetchParams): who fetches (a follower's
    replica id, or -1 for a consumer), how long it may wait for how many bytes, how much it
    takes, its isolation level, and for a consumer with client metadata (KIP-392) its rack and
    listener, with which a follower may serve it."""

    __slots__ = ("replica_id", "max_wait_ms", "min_bytes", "max_bytes", "isolation_level",
                 "bound", "client_metadata", "rack_id", "listener_name")

    def __init__(self, replica_id: int, max_wait_ms: int = 0, min_bytes: int = 0,
                 max_bytes: int = _INT32_MAX, isolation_level: int = 0, *,
                 client_metadata: bool = False, rack_id: str | None = None,
                 listener_name: str | None = None) -> None:
        self.replica_id = replica_id
        self.max_wait_ms = max_wait_ms
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.isolation_level = isolation_level
        if replica_id >= 0:
            self.bound = UpperBound.LEO
        elif isolation_level == READ_COMMITTED:
            self.bound = UpperBound.LSO
        else:
            self.bound = UpperBound.HW
        self.client_metadata = client_metadata and replica_id < 0
        self.rack_id = (rack_id or None) if self.client_metadata else None
        self.listener_name = listener_name


class FetchPass:
    """The answers of one read pass and what the long poll needs to know of it."""

    __slots__ = ("responses", "total_bytes", "has_error", "has_divergence", "throttled_until",
                 "now_ms")

    def __init__(self) -> None:
        self.responses: list[dict[str, Any]] = []
        self.total_bytes = 0
        self.has_error = False
        self.has_divergence = False
        # When a throttled partition was held back: when the leader quota allows it again.
        self.throttled_until: float | None = None
        # The wall clock of this pass (follower fetch times), read once for its partitions.
        self.now_ms = wall_clock_ms()


def empty_entry(partition: int, isolation_level: int) -> dict[str, Any]:
    """A Fetch response partition with nothing read (and no marks)."""
    return {"partition_index": partition, "error_code": ErrorCode.NONE, "high_watermark": -1,
            "last_stable_offset": -1, "log_start_offset": -1,
            "aborted_transactions": [] if isolation_level == READ_COMMITTED else None,
            "preferred_read_replica": -1, "records": b""}


def _records_of(result: ReadResult) -> object:
    """A file range of its own for sendfile when there is data (a read is one range)."""
    if not result.ranges:
        return b""
    (r,) = result.ranges
    return FileRange.pinned(r.fd, r.position, r.size) if r.size else b""


def _set_marks(entry: dict[str, Any], partition: Partition, **more: Any) -> None:
    """Answer the log's current marks (HW, LSO, log start) with no records read."""
    log = partition.log
    entry.update(high_watermark=log.high_watermark, last_stable_offset=log.last_stable_offset,
                 log_start_offset=log.log_start_offset, **more)


def read_pass(replicas: ReplicaManager, params: FetchParams, topics: Sequence[FetchTopic],
              moved: set[tuple[str, int]] | None = None,
              previous: FetchPass | None = None) -> FetchPass:
    """Read every requested partition, or with `previous` only the `moved` ones, keeping
    `previous`'s empty answers for the rest (nothing was notified about them since)."""
    replica_id = params.replica_id
    isolation_level = params.isolation_level
    remaining = params.max_bytes
    result = FetchPass()
    min_one_batch = True
    kept = None
    if previous is not None and moved is not None:
        kept = iter([entry for t in previous.responses for entry in t["partitions"]])
        result.throttled_until = previous.throttled_until
    follower = replica_id >= 0
    for topic in topics:
        name = topic.topic
        entries: list[dict[str, Any]] = []
        result.responses.append({"topic": name, "partitions": entries})
        for fp in topic.partitions:
            if kept is not None:
                entry = next(kept)
                # An entry holding records is read again: the partitions before it may
                # now take the response's byte budget.
                if (name, fp.partition) not in moved and not entry["records"]:  # type: ignore[operator]
                    entries.append(entry)
                    continue
            if follower and (entry := caught_up_entry(  # type: ignore[assignment]
                    replicas, name, fp, replica_id, isolation_level,
                    result.now_ms)) is not None:
                entries.append(entry)
                continue
            entry = empty_entry(fp.partition, isolation_level)
            entries.append(entry)
            limit = max(min(fp.partition_max_bytes, remaining), 0)
            size = read_partition(replicas, params, name, fp, entry, limit, min_one_batch, result)
            if size > 0:
                min_one_batch = False
                remaining = max(remaining - size, 0)
                result.total_bytes += size
    return result


def caught_up_entry(replicas: ReplicaManager, topic: str, fp: FetchPartition,
                    replica_id: int, isolation_level: int,
                    now_ms: int) -> dict[str, Any] | None:
    """The answer to an in-sync follower at the log end of a partition it leads here (the
    usual case of most partitions of a follower's session): the marks and nothing to read.
    None when the full path must decide."""
    partition = replicas.get_partition(topic, fp.partition)
    if (partition is None or replicas.session_lost
            or not partition.caught_up_fetch(replica_id, fp.fetch_offset,
                                             fp.current_leader_epoch,
                                             fp.last_fetched_epoch, now_ms)):
        return None
    entry = empty_entry(fp.partition, isolation_level)
    _set_marks(entry, partition)
    return entry


def read_partition(replicas: ReplicaManager, params: FetchParams, topic: str,
                   fp: FetchPartition, entry: dict[str, Any], limit: int,
                   min_one_batch: bool, result: FetchPass) -> int:
    """Answer one partition in `entry` (records, marks, or the error); the bytes read."""
    fetch_offset = fp.fetch_offset
    replica_id = params.replica_id
    bound = params.bound
    try:
        partition = _serving_replica(replicas, params, topic, fp.partition,
                                     fp.current_leader_epoch)
        log = partition.log
        if (params.rack_id is not None and replicas.replica_selector is not None
                and partition.is_leader):
            preferred = _preferred_read_replica(replicas, params, partition, fetch_offset)
            if preferred != NO_PREFERRED_REPLICA:
                # Kafka skips the read: the consumer fetches from `preferred` next.
                _set_marks(entry, partition, preferred_read_replica=preferred)
                return 0
        last_fetched_epoch = fp.last_fetched_epoch
        if last_fetched_epoch >= 0:
            epoch, end_offset = log.epoch_cache.end_offset_for(last_fetched_epoch,
                                                               log.log_end_offset)
            if epoch < last_fetched_epoch or end_offset < fetch_offset:
                # The fetcher's log diverged from ours: tell it where ours ends (KIP-595).
                _set_marks(entry, partition,
                           diverging_epoch={"epoch": epoch, "end_offset": end_offset})
                result.has_divergence = True
                return 0
        if replica_id >= 0:
            # The fetch offset is the follower's acknowledgement (not taken from a diverging
            # follower, whose offsets may name other records): it may move the HW and bring
            # the follower back into the ISR.
            replicas.on_follower_fetch(partition, replica_id, fetch_offset, result.now_ms)
            if fetch_offset == log.log_end_offset:
                # Caught up, the usual case of most partitions in a follower's session:
                # nothing to read, throttle or count.
                _set_marks(entry, partition)
                return 0
        quota = replicas.leader_quota
        throttled = (replica_id >= 0 and quota is not None and quota.active
                     and quota.is_throttled(topic, fp.partition))
        if throttled and replica_id not in partition.isr and quota.is_exceeded(now()):
            # Kafka's leader throttle: a follower outside the ISR gets nothing this time.
            limit = 0
            min_one_batch = False
            result.throttled_until = now() + max(quota.seconds_until_within(now()), 0.001)
        read = log.read(fetch_offset, limit, bound, min_one_batch)
        size = read.size
        if throttled and size:
            quota.record(size, now())
        replicas.topic_stats.record_fetch(topic, size, replica_id >= 0)
    except PARTITION_ERRORS as exc:
        entry["error_code"] = error_code_of(exc)
        result.has_error = True
        logger.debug("fetch %s-%d at %d failed: %s", topic, fp.partition, fetch_offset, exc)
        return 0
    entry.update(high_watermark=read.high_watermark, last_stable_offset=read.last_stable_offset,
                 log_start_offset=read.log_start_offset, records=_records_of(read))
    if bound is UpperBound.LSO and size:
        # The consumer drops these producers' batches between each first offset and its
        # ABORT marker; the search covers the offsets this read can hold.
        entry["aborted_transactions"] = [
            {"producer_id": t.producer_id, "first_offset": t.first_offset}
            for t in log.aborted_transactions(fetch_offset, read.upper_offset)]
    return size


def _serving_replica(replicas: ReplicaManager, params: FetchParams, topic: str,
                     partition_id: int, current_leader_epoch: int) -> Partition:
    """The local replica that may serve this fetch: the leader, or for a consumer with
    client metadata also a follower, whose reads stop at its own HW, which its fetches from
    the leader keep up to date."""
    try:
        return replicas.leader_partition(topic, partition_id, current_leader_epoch)
    except NotLeaderOrFollower:
        local = replicas.get_partition(topic, partition_id)
        if (not params.client_metadata or local is None or local.is_leader
                or local.leader_epoch < 0):
            raise
        local.check_leader_epoch(current_leader_epoch)
        return local


def _preferred_read_replica(replicas: ReplicaManager, params: FetchParams,
                            partition: Partition, fetch_offset: int) -> int:
    image = replicas.image
    racks: dict[int, str | None] = {}
    for broker_id in partition.replicas:
        registration = image.broker(broker_id)
        if (registration is not None and not registration.fenced
                and registration.endpoint(params.listener_name) is not None):
            racks[broker_id] = registration.rack
    log = partition.log
    return preferred_read_replica(
        replicas.replica_selector, params.rack_id, leader_id=partition.broker_id,
        leader_log_end_offset=log.log_end_offset, log_start_offset=log.log_start_offset,
        isr=partition.isr, followers=partition.followers, reachable_racks=racks,
        fetch_offset=fetch_offset, now_ms=wall_clock_ms())
