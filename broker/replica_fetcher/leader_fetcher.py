"""One fetcher task per source broker: Fetch requests as replica `broker_id` for every
partition this broker follows from that leader.

Each fetch asks from the local LEO and names the epoch of the last local batch
(`last_fetched_epoch`), so the leader can answer a diverging epoch instead of records; the
follower then truncates at the divergence point (never at the HW) and fetches again.
Records stay opaque: one `append_as_follower` of the whole fetched blob per partition, which
validates headers and CRCs, keeps the leader's offsets and epochs (the epoch cache follows
the batches' partition leader epochs) and replays producer state from the batch headers.
Fetches run in an incremental fetch session (KIP-227) when the leader grants one: each
names only the partitions whose fetch position moved, and the answer holds only the
partitions with news.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import trio

from broker.config.bind_address import source_address_for
from broker.log.errors import LogError
from broker.replica.manager import ReplicaManager, TopicPartition
from broker.replica.partition import Partition
from broker.replica.replication_quota import ReplicationQuota
from broker.replica_fetcher.session import FollowerFetchSession
from broker.replica_fetcher.settings import FetcherSettings
from broker.replica_fetcher.truncation import divergence_truncation_offset
from clients.net import KafkaConnection, KafkaConnectionError
from clients.protocol import ApiKey, ErrorCode, KafkaError, ProtocolError

logger = logging.getLogger(__name__)

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
# Errors that only mean this broker and the leader have not applied the same metadata yet;
# they clear within milliseconds, so they are retried sooner than replica.fetch.backoff.ms.
_METADATA_RACE_ERRORS = frozenset({
    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_LEADER_EPOCH,
    ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
})
_METADATA_RACE_BACKOFF_S = 0.05
_SESSION_ERRORS = frozenset({
    ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH,
})


class _Sent:
    """What one partition's fetch asked, to discard answers the local state outran."""

    __slots__ = ("partition", "leader_epoch", "fetch_offset")

    def __init__(self, partition: Partition) -> None:
        self.partition = partition
        self.leader_epoch = partition.leader_epoch
        self.fetch_offset = partition.log.log_end_offset


class LeaderFetcher:
    """Fetches the partitions `add`ed to it from broker `leader_id` until stopped."""

    def __init__(self, broker_id: int, leader_id: int, replicas: ReplicaManager,
                 settings: FetcherSettings, quota: ReplicationQuota | None = None) -> None:
        self.broker_id = broker_id
        self.leader_id = leader_id
        self._replicas = replicas
        self._settings = settings
        self._partitions: dict[TopicPartition, Partition] = {}
        self._delayed_until: dict[TopicPartition, float] = {}
        # The follower throttle and, per partition, the leader's HW minus our LEO at the last
        # answer: a replica with no lag is in sync and never throttled (Kafka's fetch state).
        self._quota = quota
        self._lag: dict[TopicPartition, int] = {}
        self._changed = trio.Event()
        self._scope = trio.CancelScope()
        self._conn: KafkaConnection | None = None
        self._session = FollowerFetchSession()
        self.fetches = 0

    @property
    def partitions(self) -> dict[TopicPartition, Partition]:
        return dict(self._partitions)

    def add(self, partition: Partition) -> None:
        self._partitions[partition.key] = partition
        self._delayed_until.pop(partition.key, None)
        self._changed.set()

    def remove(self, key: TopicPartition) -> None:
        self._partitions.pop(key, None)
        self._delayed_until.pop(key, None)
        self._lag.pop(key, None)

    def stop(self) -> None:
        self._scope.cancel()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        with self._scope:
            try:
                while True:
                    await self._fetch_once()
            finally:
                if self._conn is not None:
                    with trio.CancelScope(shield=True):
                        await self._conn.aclose()
                    self._conn = None

    # -- one round -----------------------------------------------------------------------

    def _ready(self) -> list[Partition]:
        now = trio.current_time()
        # A replica whose log dir is offline fetches nothing: its fetch offset would claim a
        # log it no longer has, and the leader would count it back into the ISR.
        ready = [p for key, p in self._partitions.items()
                 if self._delayed_until.get(key, 0.0) <= now
                 and p.leader_id == self.leader_id and not p.is_leader and not p.log.offline]
        quota = self._quota
        if quota is not None and quota.active and ready and quota.is_exceeded(now):
            wait = max(quota.seconds_until_within(now), 0.01)
            kept = []
            for partition in ready:
                if self._lag.get(partition.key, 1) > 0 and quota.is_throttled(*partition.key):
                    self._delay(partition.key, wait)
                else:
                    kept.append(partition)
            ready = kept
        return ready

    def _delay(self, key: TopicPartition, seconds: float) -> None:
        self._delayed_until[key] = trio.current_time() + seconds

    async def _fetch_once(self) -> None:
        ready = self._ready()
        if not ready:
            now = trio.current_time()
            # Only future delays: a partition this fetcher no longer serves must not spin it.
            wake_at = min((t for t in self._delayed_until.values() if t > now),
                          default=math.inf)
            self._changed = trio.Event()
            with trio.move_on_at(wake_at):
                await self._changed.wait()
            return
        conn = await self._connection()
        if conn is None:
            for partition in ready:
                self._delay(partition.key, self._settings.backoff_ms / 1000)
            return
        sent = {p.key: _Sent(p) for p in ready}
        settings = self._settings
        wanted: dict[TopicPartition, dict[str, Any]] = {}
        for partition in ready:
            log = partition.log
            wanted[partition.key] = {
                "partition": partition.partition_id,
                "current_leader_epoch": partition.leader_epoch,
                "fetch_offset": log.log_end_offset,
                "last_fetched_epoch": log.epoch_cache.latest_epoch,
                "log_start_offset": log.log_start_offset,
                "partition_max_bytes": settings.max_bytes}
        plan = self._session.plan(wanted)
        body = {"replica_id": self.broker_id, "max_wait_ms": settings.max_wait_ms,
                "min_bytes": settings.min_bytes, "max_bytes": settings.response_max_bytes,
                "isolation_level": 0, "session_id": plan.session_id,
                "session_epoch": plan.session_epoch, "topics": plan.topics(),
                "forgotten_topics_data": plan.forgotten_topics(), "rack_id": ""}
        timeout = (settings.socket_timeout_ms + settings.max_wait_ms) / 1000
        try:
            response = await conn.request(ApiKey.FETCH, body, timeout=timeout)
        except (KafkaConnectionError, ProtocolError, KafkaError) as exc:
            logger.info("fetch from broker %d failed: %s", self.leader_id, exc)
            await self._drop_connection()
            for partition in ready:
                self._delay(partition.key, settings.backoff_ms / 1000)
            return
        self.fetches += 1
        error_code = response.get("error_code", ErrorCode.NONE)
        self._session.answered(plan, error_code, int(response.get("session_id", 0)))
        if error_code in _SESSION_ERRORS:
            # The leader lost the session (a restart, an eviction): fetch in full at once.
            logger.info("fetch session with broker %d reset: %s", self.leader_id,
                        _name(error_code))
            return
        if error_code != ErrorCode.NONE:
            logger.warning("fetch from broker %d answered %s", self.leader_id,
                           _name(response["error_code"]))
            for partition in ready:
                self._delay(partition.key, settings.backoff_ms / 1000)
            return
        out_of_range = []
        for topic in response.get("responses") or ():
            for entry in topic.get("partitions") or ():
                key = (topic["topic"], entry["partition_index"])
                request = sent.get(key)
                if request is not None and self._still_current(key, request):
                    if self._process(request.partition, entry):
                        out_of_range.append(request.partition)
        for partition in out_of_range:
            await self._handle_out_of_range(conn, partition)

    def _still_current(self, key: TopicPartition, request: _Sent) -> bool:
        partition = self._partitions.get(key)
        return (partition is request.partition and partition.leader_id == self.leader_id
                and partition.leader_epoch == request.leader_epoch
                and partition.log.log_end_offset == request.fetch_offset)

    def _process(self, partition: Partition, entry: dict[str, Any]) -> bool:
        """Apply one partition's answer; True when it needs out-of-range handling."""
        code = int(entry.get("error_code", ErrorCode.NONE))
        key = partition.key
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            return True
        if code != ErrorCode.NONE:
            backoff = (_METADATA_RACE_BACKOFF_S if code in _METADATA_RACE_ERRORS
                       else self._settings.backoff_ms / 1000)
            logger.debug("%s-%d: fetch from %d answered %s", partition.topic,
                         partition.partition_id, self.leader_id, _name(code))
            self._delay(key, backoff)
            return False
        log = partition.log
        diverging = entry.get("diverging_epoch") or {}
        if int(diverging.get("epoch", -1)) >= 0:
            self._truncate(partition, int(diverging["epoch"]), int(diverging["end_offset"]))
            return False
        records = entry.get("records")
        hw_before = log.high_watermark
        try:
            if records:
                log.append_as_follower(records)
                quota = self._quota
                if quota is not None and quota.active and quota.is_throttled(*key):
                    quota.record(len(records), trio.current_time())
            high_watermark = int(entry["high_watermark"])
            self._lag[key] = high_watermark - log.log_end_offset
            if log.update_high_watermark(high_watermark) > hw_before:
                # Consumers fetching from this follower (KIP-392) wait on its HW.
                self._replicas.notify_high_watermark(key)
            leader_start = int(entry.get("log_start_offset", -1))
            if leader_start > log.log_start_offset:
                log.delete_records_before(min(leader_start, log.high_watermark))
        except LogError as exc:
            logger.error("%s-%d: cannot apply fetched data from %d: %s", partition.topic,
                         partition.partition_id, self.leader_id, exc)
            self._delay(key, self._settings.backoff_ms / 1000)
        return False

    def _truncate(self, partition: Partition, epoch: int, end_offset: int) -> None:
        log = partition.log
        leo = log.log_end_offset
        target = divergence_truncation_offset(log.epoch_cache.end_offset_for(epoch, leo),
                                              epoch, end_offset, leo)
        logger.info("%s-%d: leader %d diverges after epoch %d at %d; truncating %d -> %d",
                    partition.topic, partition.partition_id, self.leader_id, epoch, end_offset,
                    leo, target)
        if target >= leo:
            # No records to cut, but an epoch entry may start at the LEO with nothing written
            # in it (this broker led that epoch briefly): drop it, as Kafka's truncateTo does,
            # so the next fetch names the epoch of the last record instead.
            entries = log.epoch_cache.entries
            log.epoch_cache.truncate_from_end(target)
            if log.epoch_cache.entries == entries:
                logger.warning("%s-%d: divergence at %d does not shorten the log (LEO %d)",
                               partition.topic, partition.partition_id, end_offset, leo)
                self._delay(partition.key, self._settings.backoff_ms / 1000)
            return
        log.truncate_to(target)

    async def _handle_out_of_range(self, conn: KafkaConnection, partition: Partition) -> None:
        """Kafka's follower out-of-range handling: cut back to the leader's end when ours is
        past it, restart at the leader's log start when ours is below it."""
        log = partition.log
        leo = log.log_end_offset
        leader_end = await self._leader_offset(conn, partition, LATEST_TIMESTAMP)
        if leader_end is not None and leader_end < leo:
            logger.warning("%s-%d: LEO %d is past leader %d's end %d; truncating",
                           partition.topic, partition.partition_id, leo, self.leader_id,
                           leader_end)
            log.truncate_to(leader_end)
            return
        leader_start = await self._leader_offset(conn, partition, EARLIEST_TIMESTAMP)
        if leader_start is not None and leader_start > leo:
            logger.info("%s-%d: LEO %d is below leader %d's log start %d; starting there",
                        partition.topic, partition.partition_id, leo, self.leader_id,
                        leader_start)
            log.truncate_fully_and_start_at(leader_start)
            return
        self._delay(partition.key, self._settings.backoff_ms / 1000)

    async def _leader_offset(self, conn: KafkaConnection, partition: Partition,
                             timestamp: int) -> int | None:
        body = {"replica_id": self.broker_id, "isolation_level": 0, "topics": [{
            "name": partition.topic, "partitions": [{
                "partition_index": partition.partition_id,
                "current_leader_epoch": partition.leader_epoch, "timestamp": timestamp}]}]}
        try:
            response = await conn.request(ApiKey.LIST_OFFSETS, body,
                                          timeout=self._settings.socket_timeout_ms / 1000)
            entry = response["topics"][0]["partitions"][0]
        except (KafkaConnectionError, ProtocolError, KafkaError, LookupError) as exc:
            logger.info("ListOffsets to broker %d failed: %s", self.leader_id, exc)
            return None
        if entry["error_code"] != ErrorCode.NONE:
            return None
        return int(entry["offset"])

    # -- the connection ------------------------------------------------------------------

    async def _connection(self) -> KafkaConnection | None:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        registration = self._replicas.image.broker(self.leader_id)
        endpoint = None if registration is None else registration.endpoint(
            self._settings.listener_name)
        if endpoint is None:
            logger.info("broker %d has no %s endpoint in the metadata yet", self.leader_id,
                        self._settings.listener_name)
            return None
        self._session.reset()
        try:
            self._conn = await KafkaConnection.connect(
                endpoint.host, endpoint.port, client_id=f"raftka-replica-fetcher-{self.broker_id}",
                timeout=self._settings.socket_timeout_ms / 1000,
                security=self._settings.security, sasl=self._settings.sasl,
                local_address=source_address_for(self._settings.local_address, endpoint.host),
                receive_buffer_bytes=self._settings.receive_buffer_bytes)
        except (KafkaConnectionError, ProtocolError, KafkaError) as exc:
            logger.info("cannot reach leader %d at %s:%d: %s", self.leader_id, endpoint.host,
                        endpoint.port, exc)
            return None
        logger.info("fetching from broker %d at %s:%d", self.leader_id, endpoint.host,
                    endpoint.port)
        return self._conn

    async def _drop_connection(self) -> None:
        # Whether the leader applied the failed fetch is unknown: the next one is full.
        self._session.reset()
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.aclose()


def _name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)
