"""Appends to the local leader replicas (Kafka's ReplicaManager.appendRecords): the one way
into a leader log for Produce, WriteTxnMarkers and the coordinators' internal topics, and the
one acks=all wait (Kafka's DelayedProduce) in the replica manager's purgatory.

A caller hands `append_records` one `AppendEntry` per partition and reads each entry's
outcome from it afterwards. The payload stays opaque: the log stamps offsets into it in place,
straight in the request frame when that is writable, else in one copy. A `flush.messages`
fsync waits until every entry is appended and runs off the event loop, so a slow disk holds up
no other partition; nothing is acknowledged before it.

With acks=all the wait ends, per entry, when the high watermark passes what was appended
(then NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below min.insync.replicas meanwhile),
when the leadership moves or this broker loses its controller session
(NOT_LEADER_OR_FOLLOWER), or at the timeout (REQUEST_TIMED_OUT).
"""

from __future__ import annotations

import enum
import logging
from typing import Any, Sequence

import trio

from broker.log.errors import CorruptMessage, InvalidRecord, KafkaStorageError
from broker.handled_alone import handled_alone
from broker.log.flush_plan import flush_off_loop
from broker.log.partition_log import PartitionLog
from broker.replica.append_verification import verify_transactional_entries
from broker.replica.errors import PARTITION_ERRORS, error_code_of
from broker.replica.manager import ReplicaManager
from broker.replica.partition import Partition
from broker.replica.txn_verification import TransactionVerifier, VerificationGuard
from clients.clock import wall_clock_ms
from clients.protocol import ErrorCode
from clients.records.errors import CorruptRecordError
from clients.records.header import BATCH_HEADER_SIZE, parse_header, peek_batch_size

logger = logging.getLogger(__name__)

_ONE_BATCH = "produce requests must carry exactly one record batch per partition"
# Appends, and bytes of batches, between two checkpoints of a request handled alone.
_YIELD_EVERY = 1000
_YIELD_AFTER_BYTES = 1 << 20

VALID_ACKS = (-1, 0, 1)
ZSTD = 4


class AppendOrigin(enum.Enum):
    """Who appends (Kafka's AppendOrigin). A follower's copy of the leader's batches does not
    come this way: the replica fetcher appends it to its own log, with no acks to wait for."""

    # A producer's Produce: exactly one v2 batch per partition, KIP-890 verification.
    CLIENT = "client"
    # A coordinator's write: its internal-topic batches, or WriteTxnMarkers' markers.
    COORDINATOR = "coordinator"


class TxnMarker:
    """A COMMIT or ABORT control batch ending a producer's transaction in a partition (the
    log builds the batch; only a COORDINATOR append carries one)."""

    __slots__ = ("committed", "producer_id", "producer_epoch", "coordinator_epoch")

    def __init__(self, committed: bool, producer_id: int, producer_epoch: int,
                 coordinator_epoch: int) -> None:
        self.committed = committed
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.coordinator_epoch = coordinator_epoch


class AppendEntry:
    """One partition of an append: what to write (`records`, or a `marker`), then its outcome.

    An entry created with an error (`fail`) is left alone: a caller keeps the partitions it
    refused itself (authorization, say) in the same list, in request order."""

    __slots__ = ("topic", "partition", "records", "marker", "verification", "error_code",
                 "error_message", "record_errors", "base_offset", "log_append_time_ms",
                 "log_start_offset")

    def __init__(self, topic: str, partition: int, records: Any = None,
                 marker: TxnMarker | None = None) -> None:
        self.topic = topic
        self.partition = partition
        self.records = records
        self.marker = marker
        # The KIP-890 guard the append needs to be still current (set by the verification).
        self.verification: VerificationGuard | None = None
        self.error_code = int(ErrorCode.NONE)
        self.error_message: str | None = None
        # (batch index, message) of the records the log's validator refused (KIP-467).
        self.record_errors: Sequence[tuple[int, str]] = ()
        self.base_offset = -1
        self.log_append_time_ms = -1
        self.log_start_offset = -1

    def fail(self, code: int, message: str | None = None,
             record_errors: Sequence[tuple[int, str]] = ()) -> None:
        self.error_code = int(code)
        self.error_message = message
        self.record_errors = record_errors

    def __repr__(self) -> str:
        return (f"AppendEntry({self.topic}-{self.partition}, error={self.error_code}, "
                f"base_offset={self.base_offset})")


async def append_records(replicas: ReplicaManager, entries: Sequence[AppendEntry], acks: int,
                         timeout_ms: int, origin: AppendOrigin, *,
                         transactional_id: str | None = None,
                         verifier: TransactionVerifier | None = None,
                         zstd_allowed: bool = True) -> None:
    """Append every entry to its partition's local leader replica, in order, and with acks=all
    (-1) wait up to `timeout_ms` for each to be replicated; each entry's outcome (offsets or
    error) is set on it. A CLIENT append of a `transactional_id` is first verified with
    `verifier` (KIP-890) where the batch would open the producer's transaction; a CLIENT batch
    in zstd is refused unless `zstd_allowed` (Produce before v7)."""
    if acks not in VALID_ACKS:
        for entry in entries:
            if not entry.error_code:
                entry.fail(ErrorCode.INVALID_REQUIRED_ACKS, f"acks must be -1, 0 or 1, not {acks}")
        return
    client = origin is AppendOrigin.CLIENT
    if client and transactional_id is not None and verifier is not None:
        await verify_transactional_entries(replicas, verifier, transactional_id, entries)
    timestamp = wall_clock_ms()
    pending: list[_Pending] = []
    flushes: list[tuple[AppendEntry, PartitionLog]] = []
    alone = handled_alone()
    since_checkpoint = 0
    for index, entry in enumerate(entries):
        if alone and (since_checkpoint >= _YIELD_AFTER_BYTES
                      or index % _YIELD_EVERY == _YIELD_EVERY - 1):
            # The request is handled before its connection's next one is read
            # (broker.handled_alone), so no later request of the same producer overtakes
            # the appends left.
            await trio.sleep(0)
            since_checkpoint = 0
        if entry.records is not None:
            since_checkpoint += len(entry.records)
        if entry.error_code:
            continue
        # Told apart without raising: a hostile request may name 200,000 such partitions.
        if replicas.is_unknown(entry.topic, entry.partition):
            entry.fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                       f"unknown partition {entry.topic}-{entry.partition}")
            continue
        if client and not entry.records:
            entry.fail(ErrorCode.INVALID_RECORD, _ONE_BATCH)
            continue
        try:
            partition = replicas.leader_partition(entry.topic, entry.partition)
            log = partition.log
            high_watermark = log.high_watermark
            marker = entry.marker
            if marker is None:
                batches = (_client_batch(entry.records, transactional_id, zstd_allowed) if client
                           else _coordinator_batches(entry.records))
                with log.flush_deferred():
                    result = partition.append_as_leader(batches, acks, timestamp,
                                                        entry.verification)
            else:
                if client:
                    raise ValueError("only a coordinator writes transaction markers")
                with log.flush_deferred():
                    result = partition.append_marker(marker.committed, marker.producer_id,
                                                     marker.producer_epoch,
                                                     marker.coordinator_epoch, timestamp)
            if log.flush_pending:
                flushes.append((entry, log))
        except PARTITION_ERRORS as exc:
            entry.fail(error_code_of(exc), str(exc), getattr(exc, "record_errors", ()))
            logger.debug("append to %s-%d failed: %s", entry.topic, entry.partition, exc)
            continue
        entry.base_offset = result.first_offset
        entry.log_append_time_ms = result.log_append_time
        entry.log_start_offset = result.log_start_offset
        if marker is not None:
            # A marker may move the LSO even where the HW stays: read_committed consumers
            # are woken as well as the followers.
            replicas.notify(partition.key)
        elif not result.duplicate:
            replicas.notify_appended(partition, high_watermark)
        if acks == -1 and result.last_offset >= 0:
            pending.append(_Pending(entry, partition, result.last_offset + 1))
    if flushes:
        await _flush_appended(flushes)
        pending = [p for p in pending if p.entry.error_code == ErrorCode.NONE]
    if pending:
        # The records are in the log: let go of them (and so of the request's frame) while
        # waiting for the replicas, as the request gives back the memory it was charged
        # when it parks (broker.parking).
        for entry in entries:
            entry.records = None
        await _await_replication(replicas, pending, timeout_ms)


def _stampable(records: Any) -> bytearray | memoryview:
    """`records` itself when it is a writable byte view, else a copy the log may stamp."""
    if (isinstance(records, memoryview) and not records.readonly and records.format == "B"
            and records.c_contiguous):
        return records
    return bytearray(records)


def _coordinator_batches(records: Any) -> bytearray | memoryview:
    """A coordinator's batches (one or more), writable for stamping."""
    if records is None or len(records) == 0:
        raise InvalidRecord("an append needs at least one record batch")
    return _stampable(records)


def _client_batch(records: Any, transactional_id: str | None,
                  zstd_allowed: bool) -> bytearray | memoryview:
    """The one v2 batch Kafka allows per partition from Produce v3 on, writable for
    stamping."""
    if records is None or len(records) == 0:
        raise InvalidRecord(_ONE_BATCH)
    buf = _stampable(records)
    try:
        size = peek_batch_size(buf, 0)
        if size is None or size > len(buf) or len(buf) < BATCH_HEADER_SIZE:
            raise CorruptRecordError("truncated record batch")
        header = parse_header(buf, 0)
    except CorruptRecordError as exc:
        raise CorruptMessage(str(exc)) from None
    if size != len(buf):
        raise InvalidRecord(_ONE_BATCH)
    if header.compression == ZSTD and not zstd_allowed:
        exc = InvalidRecord("zstd needs produce v7 or later")
        exc.error_code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        raise exc
    if header.is_transactional and transactional_id is None:
        raise InvalidRecord("transactional records need a transactional id")
    return buf


async def _flush_appended(flushes: list[tuple[AppendEntry, PartitionLog]]) -> None:
    """The deferred flushes of an append, concurrently; an entry whose flush failed answers
    KAFKA_STORAGE_ERROR (its log went offline), as Kafka's would."""
    async def flush(entry: AppendEntry, log: PartitionLog) -> None:
        try:
            await flush_off_loop(log)
        except KafkaStorageError as exc:
            entry.fail(ErrorCode.KAFKA_STORAGE_ERROR, str(exc))

    async with trio.open_nursery() as nursery:
        for entry, log in flushes:
            nursery.start_soon(flush, entry, log)


# -- the delayed produce (acks=all) ----------------------------------------------------------


class _Pending:
    """One appended entry waiting for its partition's HW to reach `required_offset`."""

    __slots__ = ("entry", "partition", "required_offset", "leader_epoch")

    def __init__(self, entry: AppendEntry, partition: Partition, required_offset: int) -> None:
        self.entry = entry
        self.partition = partition
        self.required_offset = required_offset
        self.leader_epoch = partition.leader_epoch


def _settled(replicas: ReplicaManager, item: _Pending) -> bool:
    partition = item.partition
    current = replicas.get_partition(*partition.key)
    if current is not partition or not partition.is_leader or partition.leader_epoch != item.leader_epoch:
        item.entry.fail(ErrorCode.NOT_LEADER_OR_FOLLOWER, "leadership moved while waiting for acks")
        return True
    if replicas.session_lost:
        item.entry.fail(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                        "this broker lost its session with the controller while waiting for acks")
        return True
    if partition.high_watermark < item.required_offset:
        return False
    if partition.is_under_min_isr:
        item.entry.fail(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                        "the ISR shrank below min.insync.replicas after the append")
    return True


async def _await_replication(replicas: ReplicaManager, pending: list[_Pending],
                             timeout_ms: int) -> None:
    """Kafka's DelayedProduce: wait until every pending entry settled, woken by its
    partition's notifications (HW, leadership, session); the ones left at the deadline time
    out."""
    deadline = trio.current_time() + max(timeout_ms, 0) / 1000
    with replicas.purgatory.watch((p.partition.key for p in pending), "Produce") as waiter:
        while True:
            pending = [p for p in pending if not _settled(replicas, p)]
            if not pending or not await waiter.wait(deadline):
                break
    for item in pending:
        item.entry.fail(ErrorCode.REQUEST_TIMED_OUT,
                        f"the high watermark did not reach {item.required_offset} within "
                        f"{timeout_ms} ms")
