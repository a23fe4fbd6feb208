"""Fetch (v4-12) for consumers, and for followers up to the log end offset.

Records leave as file ranges the network server `os.sendfile`s. A read_committed consumer
(isolation_level 1) reads up to the last stable offset and gets the aborted transactions of
the range from the aborted-transaction indexes, so it can drop their batches itself. A fetch that finds fewer
than `min_bytes` waits in the replica manager's purgatory until enough data arrived or
`max_wait_ms` passed: a follower's is woken by every append, a consumer's only when the HW
(what it may read) moves. Fetch sessions (KIP-227) are granted to
followers (`broker.replica.fetch_session`); consumers are answered sessionless (session id 0
tells them to send full fetches), and an incremental fetch naming no live session gets
FETCH_SESSION_ID_NOT_FOUND.

Fetching from the closest replica (KIP-392): a consumer fetch of v11+ carries client metadata
(its rack). Such a fetch may be served by a follower, up to the follower's HW (or LSO), and a
leader with `replica.selector.class` rack-aware may answer it with a `preferred_read_replica`
and no records, so the consumer goes to a follower in its rack. Older consumer fetches and
replica fetches are served by the leader only.
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

import trio
from trio import current_time as now

from broker.apis.authorization import ALLOW_ALL, AclOperation, Authorization, ResourceType
from broker.apis.common import PARTITION_ERRORS, error_code_of
from broker.log.partition_log import PartitionLog
from broker.log.results import FileRange, ReadResult, UpperBound
from broker.apis.request import RequestContext, DecodedRequest, RequestRouter
from broker.replica.fetch_session import FetchSessionCache
from broker.replica.errors import NotLeaderOrFollower
from broker.replica.manager import ReplicaManager, WaitKey, appended_key
from broker.replica.partition import Partition
from broker.replica.read_replica import NO_PREFERRED_REPLICA, preferred_read_replica
from clients.clock import wall_clock_ms
from clients.protocol import ApiKey, ErrorCode

logger = logging.getLogger(__name__)

READ_COMMITTED = 1
INVALID_SESSION_ID = 0
_INT32_MAX = 2**31 - 1
# From this version a consumer's fetch carries client metadata (KIP-392).
_CLIENT_METADATA_VERSION = 11


def _records_of(result: ReadResult) -> object:
    """A file range of its own for sendfile when there is data (a read is one range)."""
    if not result.ranges:
        return b""
    (r,) = result.ranges
    return FileRange.pinned(r.fd, r.position, r.size) if r.size else b""


def _set_marks(entry: dict[str, Any], log: PartitionLog, **more: Any) -> None:
    """Answer the log's current marks (HW, LSO, log start) with no records read."""
    entry.update(high_watermark=log.high_watermark, last_stable_offset=log.last_stable_offset,
                 log_start_offset=log.log_start_offset, **more)


def _empty_entry(partition: int, isolation_level: int) -> dict[str, Any]:
    return {"partition_index": partition, "error_code": ErrorCode.NONE, "high_watermark": -1,
            "last_stable_offset": -1, "log_start_offset": -1,
            "aborted_transactions": [] if isolation_level == READ_COMMITTED else None,
            "preferred_read_replica": -1, "records": b""}


class _FetchPass:
    """One read over every requested partition, honouring max_bytes and partition_max_bytes."""

    def __init__(self) -> None:
        self.responses: list[dict[str, Any]] = []
        self.total_bytes = 0
        self.has_error = False
        self.has_divergence = False
        # When a throttled partition was held back: when the leader quota allows it again.
        self.throttled_until: float | None = None
        # The wall clock of this pass (follower fetch times), read once for its partitions.
        self.now_ms = wall_clock_ms()


class _Reader:
    """Who is fetching: a follower (replica id), or a consumer with or without client
    metadata (rack id and listener), which decides the replicas that may serve it."""

    __slots__ = ("replica_id", "client_metadata", "rack_id", "ctx")

    def __init__(self, replica_id: int, api_version: int, rack_id: str | None,
                 ctx: RequestContext) -> None:
        self.replica_id = replica_id
        self.client_metadata = replica_id < 0 and api_version >= _CLIENT_METADATA_VERSION
        self.rack_id = (rack_id or None) if self.client_metadata else None
        self.ctx = ctx


class FetchHandler:
    """Handles Fetch from the local leader replicas."""

    def __init__(self, replicas: ReplicaManager, authz: Authorization = ALLOW_ALL,
                 sessions: FetchSessionCache | None = None,
                 replica_selector: str | None = None) -> None:
        self._replicas = replicas
        self._authz = authz
        self._sessions = sessions or FetchSessionCache()
        self._replica_selector = replica_selector

    def register(self, router: RequestRouter) -> None:
        router.register(ApiKey.FETCH, self.handle, fetch_error_body)

    def _readable(self, ctx: RequestContext, replica_id: int, topics: list[dict]) -> set[str]:
        """Topics the request may read: a follower needs CLUSTER_ACTION (then all), a
        consumer READ on each topic."""
        names = {t["topic"] for t in topics}
        if replica_id >= 0:
            return names if self._authz.cluster(ctx, AclOperation.CLUSTER_ACTION) else set()
        return self._authz.allowed_names(ctx, AclOperation.READ, ResourceType.TOPIC, names)

    async def handle(self, request: DecodedRequest, ctx: RequestContext) -> dict:
        body = request.body
        replica_id = int(body.get("replica_id", -1))
        context = self._sessions.context(body, replica_id)
        if context.error_code != ErrorCode.NONE:
            return {"throttle_time_ms": 0, "error_code": context.error_code,
                    "session_id": INVALID_SESSION_ID, "responses": []}
        if context.incremental:
            body = {**body, "topics": context.topics}
        topics = body.get("topics") or []
        max_wait_ms = int(body.get("max_wait_ms", 0))
        min_bytes = int(body.get("min_bytes", 0))
        deadline = trio.current_time() + max(max_wait_ms, 0) / 1000
        readable = self._readable(ctx, replica_id, topics)
        reader = _Reader(replica_id, request.api_version, body.get("rack_id"), ctx)
        keys: list[WaitKey] = [(t["topic"], p["partition"]) for t in topics
                               if t["topic"] in readable for p in t.get("partitions") or ()]
        if replica_id >= 0:
            # A follower reads up to the log end: it is woken by appends (and by leadership
            # changes, which notify the appended key too), not by a HW that moved alone; as
            # in Kafka, its next fetch carries the new HW.
            keys = [appended_key(key) for key in keys]  # type: ignore[arg-type]
        # A consumer is woken only when what it may read moves (the HW), not by each append.
        with self._replicas.purgatory.watch(keys, "Fetch") as waiter:
            result = self._read(body, reader, readable)
            while (max_wait_ms > 0 and result.total_bytes < min_bytes and not result.has_error
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
                result = self._read(body, reader, readable, moved, result)
        responses = result.responses
        if context.session is not None:
            responses = context.session.answer(responses, context.incremental)
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
                "session_id": context.session_id, "responses": responses}

    def _read(self, body: dict[str, Any], reader: _Reader, readable: set[str],
              moved: set[tuple[str, int]] | None = None,
              previous: _FetchPass | None = None) -> _FetchPass:
        """Read every requested partition, or with `previous` only the `moved` ones, keeping
        `previous`'s empty answers for the rest (nothing was notified about them since)."""
        replica_id = reader.replica_id
        isolation_level = int(body.get("isolation_level", 0))
        if replica_id >= 0:
            bound = UpperBound.LEO
        elif isolation_level == READ_COMMITTED:
            bound = UpperBound.LSO
        else:
            bound = UpperBound.HW
        remaining = int(body.get("max_bytes", _INT32_MAX))
        result = _FetchPass()
        min_one_batch = True
        kept = None
        if previous is not None and moved is not None:
            kept = iter([entry for t in previous.responses for entry in t["partitions"]])
            result.throttled_until = previous.throttled_until
        for topic in body.get("topics") or ():
            entries: list[dict[str, Any]] = []
            result.responses.append({"topic": topic["topic"], "partitions": entries})
            caught_up = replica_id >= 0 and topic["topic"] in readable
            for fp in topic.get("partitions") or ():
                if kept is not None:
                    entry = next(kept)
                    # An entry holding records is read again: the partitions before it may
                    # now take the response's byte budget.
                    if ((topic["topic"], fp["partition"]) not in moved  # type: ignore[operator]
                            and not entry["records"]):
                        entries.append(entry)
                        continue
                if caught_up and (entry := self._caught_up_entry(  # type: ignore[assignment]
                        topic["topic"], fp, replica_id, isolation_level,
                        result.now_ms)) is not None:
                    entries.append(entry)
                    continue
                entry = _empty_entry(fp["partition"], isolation_level)
                entries.append(entry)
                if topic["topic"] not in readable:
                    entry["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                    continue
                limit = max(min(int(fp["partition_max_bytes"]), remaining), 0)
                size = self._read_partition(topic["topic"], fp, entry, bound, limit,
                                            min_one_batch, result, reader)
                if size > 0:
                    min_one_batch = False
                    remaining = max(remaining - size, 0)
                    result.total_bytes += size
        return result

    def _caught_up_entry(self, topic: str, fp: dict[str, Any], replica_id: int,
                         isolation_level: int, now_ms: int) -> dict[str, Any] | None:
        """The answer to an in-sync follower at the log end of a partition it leads here
        (the usual case of most partitions of a follower's session): the marks and nothing
        to read. None when the full path must decide."""
        partition = self._replicas.get_partition(topic, fp["partition"])
        if (partition is None or self._replicas.session_lost
                or not partition.caught_up_fetch(replica_id, fp["fetch_offset"],
                                                 fp.get("current_leader_epoch", -1),
                                                 fp.get("last_fetched_epoch", -1), now_ms)):
            return None
        entry = _empty_entry(fp["partition"], isolation_level)
        _set_marks(entry, partition.log)
        return entry

    def _read_partition(self, topic: str, fp: dict[str, Any], entry: dict[str, Any],
                        bound: UpperBound, limit: int, min_one_batch: bool,
                        result: _FetchPass, reader: _Reader) -> int:
        fetch_offset = int(fp["fetch_offset"])
        replica_id = reader.replica_id
        try:
            partition = self._serving_replica(topic, fp["partition"],
                                              int(fp.get("current_leader_epoch", -1)), reader)
            log = partition.log
            if reader.rack_id is not None and self._replica_selector is not None \
                    and partition.is_leader:
                preferred = self._preferred_read_replica(partition, reader, fetch_offset)
                if preferred != NO_PREFERRED_REPLICA:
                    # Kafka skips the read: the consumer fetches from `preferred` next.
                    _set_marks(entry, log, preferred_read_replica=preferred)
                    return 0
            last_fetched_epoch = int(fp.get("last_fetched_epoch", -1))
            if last_fetched_epoch >= 0:
                epoch, end_offset = log.epoch_cache.end_offset_for(last_fetched_epoch,
                                                                   log.log_end_offset)
                if epoch < last_fetched_epoch or end_offset < fetch_offset:
                    # The fetcher's log diverged from ours: tell it where ours ends (KIP-595).
                    _set_marks(entry, log,
                               diverging_epoch={"epoch": epoch, "end_offset": end_offset})
                    result.has_divergence = True
                    return 0
            if replica_id >= 0:
                # The fetch offset is the follower's acknowledgement (not taken from a
                # diverging follower, whose offsets may name other records): it may move
                # the HW and bring the follower back into the ISR.
                self._replicas.on_follower_fetch(partition, replica_id, fetch_offset,
                                                 result.now_ms)
                if fetch_offset == log.log_end_offset:
                    # Caught up, the usual case of most partitions in a follower's session:
                    # nothing to read, throttle or count.
                    _set_marks(entry, log)
                    return 0
            quota = self._replicas.leader_quota
            throttled = (replica_id >= 0 and quota is not None and quota.active
                         and quota.is_throttled(topic, fp["partition"]))
            if throttled and replica_id not in partition.isr and quota.is_exceeded(now()):
                # Kafka's leader throttle: a follower outside the ISR gets nothing this time.
                limit = 0
                min_one_batch = False
                result.throttled_until = now() + max(quota.seconds_until_within(now()), 0.001)
            read = log.read(fetch_offset, limit, bound, min_one_batch)
            size = read.size
            if throttled and size:
                quota.record(size, now())
            self._replicas.topic_stats.record_fetch(topic, size, replica_id >= 0)
        except PARTITION_ERRORS as exc:
            entry["error_code"] = error_code_of(exc)
            result.has_error = True
            logger.debug("fetch %s-%d at %d failed: %s", topic, fp["partition"], fetch_offset, exc)
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

    def _serving_replica(self, topic: str, partition_id: int, current_leader_epoch: int,
                         reader: _Reader) -> Partition:
        """The local replica that may serve this fetch: the leader, or for a consumer with
        client metadata also a follower (Kafka's fetchOnlyLeader false), whose reads stop
        at its own HW, which its fetches from the leader keep up to date."""
        try:
            return self._replicas.leader_partition(topic, partition_id, current_leader_epoch)
        except NotLeaderOrFollower:
            local = self._replicas.get_partition(topic, partition_id)
            if (not reader.client_metadata or local is None or local.is_leader
                    or local.leader_epoch < 0):
                raise
            local.check_leader_epoch(current_leader_epoch)
            return local

    def _preferred_read_replica(self, partition: Partition, reader: _Reader,
                                fetch_offset: int) -> int:
        image = self._replicas.image
        racks: dict[int, str | None] = {}
        for broker_id in partition.replicas:
            registration = image.broker(broker_id)
            if (registration is not None and not registration.fenced
                    and registration.endpoint(reader.ctx.listener_name) is not None):
                racks[broker_id] = registration.rack
        log = partition.log
        return preferred_read_replica(
            self._replica_selector, reader.rack_id, leader_id=partition.broker_id,
            leader_log_end_offset=log.log_end_offset, log_start_offset=log.log_start_offset,
            isr=partition.isr, followers=partition.followers, reachable_racks=racks,
            fetch_offset=fetch_offset, now_ms=wall_clock_ms())


def fetch_error_body(body: Mapping[str, Any], version: int, error_code: int,
                     message: str | None = None) -> dict:
    """The top-level error with every requested partition carrying it too."""
    topics = body.get("topics") or []
    return {"throttle_time_ms": 0, "error_code": error_code, "session_id": INVALID_SESSION_ID,
            "responses": [{"topic": t["topic"], "partitions": [
                {**_empty_entry(p["partition"], 0), "error_code": error_code}
                for p in t.get("partitions") or ()]} for t in topics]}
