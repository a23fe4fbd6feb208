"""Keys and values of `__consumer_offsets` records, and the batches that carry them.

Kafka's own schemas are replaced by msgpack (the topic is internal); what is kept is
Kafka's shape: a versioned key saying what the record is about (an offset commit, a
group's metadata, a consumer-type group's state) and a versioned value, with a null value
(a tombstone) deleting the key once the log is compacted. Key type numbers follow Kafka's key
versions (1 offset commit, 2 group metadata, 3 consumer group metadata), so one compacted key
space never mixes them. A consumer group (KIP-848) is one record holding its whole state,
where Kafka writes one record per kind of change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence, Union

import msgpack

from clients.records.batch import Record, RecordBatch, decode_batch, encode_batch
from clients.records.errors import RecordsError
from clients.records.header import parse_header

OFFSET_COMMIT_KEY = 1
GROUP_METADATA_KEY = 2
CONSUMER_GROUP_KEY = 3
CONSUMER_GROUP_VALUE_VERSION = 0
OFFSET_VALUE_VERSION = 0
GROUP_VALUE_VERSION = 0


class OffsetsRecordError(ValueError):
    """A `__consumer_offsets` record this code cannot read."""


@dataclass(frozen=True, slots=True)
class OffsetKey:
    """The committed offset of one partition for one group."""

    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    """The membership and generation of one group."""

    group: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupKey:
    """The state of one consumer-type group (KIP-848)."""

    group: str


RecordKey = Union[OffsetKey, GroupKey, ConsumerGroupKey]


@dataclass(frozen=True, slots=True)
class OffsetValue:
    """A committed offset; `expire_timestamp` is -1 unless the committer asked for one
    (OffsetCommit v2-4 `retention_time_ms`)."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1


@dataclass(frozen=True, slots=True)
class MemberValue:
    """One member as stored in its group's metadata record."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupValue:
    """A group's generation: its protocol, leader and members (with their assignments)."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[MemberValue, ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupValue:
    """A consumer group's epochs, members and assignments, as plain msgpack data (its
    layout is `broker.group.consumer.persistence`'s)."""

    state: Any


RecordValue = Union[OffsetValue, GroupValue, ConsumerGroupValue]


def encode_key(key: RecordKey) -> bytes:
    if isinstance(key, OffsetKey):
        return msgpack.packb([OFFSET_COMMIT_KEY, key.group, key.topic, key.partition])
    if isinstance(key, ConsumerGroupKey):
        return msgpack.packb([CONSUMER_GROUP_KEY, key.group])
    return msgpack.packb([GROUP_METADATA_KEY, key.group])


def decode_key(data: bytes) -> RecordKey:
    try:
        fields = msgpack.unpackb(data)
        kind = fields[0]
        if kind == OFFSET_COMMIT_KEY:
            return OffsetKey(str(fields[1]), str(fields[2]), int(fields[3]))
        if kind == GROUP_METADATA_KEY:
            return GroupKey(str(fields[1]))
        if kind == CONSUMER_GROUP_KEY:
            return ConsumerGroupKey(str(fields[1]))
    except (ValueError, TypeError, IndexError, msgpack.UnpackException) as exc:
        raise OffsetsRecordError(f"unreadable __consumer_offsets key: {exc}") from None
    raise OffsetsRecordError(f"unknown __consumer_offsets key type {kind!r}")


def _member_fields(m: MemberValue) -> list[object]:
    return [m.member_id, m.group_instance_id, m.client_id, m.client_host,
            m.rebalance_timeout, m.session_timeout, m.subscription, m.assignment]


def encode_value(value: RecordValue | None) -> bytes | None:
    """The record value; None (a tombstone) stays None."""
    if value is None:
        return None
    if isinstance(value, OffsetValue):
        return msgpack.packb([OFFSET_VALUE_VERSION, value.offset, value.leader_epoch,
                              value.metadata, value.commit_timestamp, value.expire_timestamp])
    if isinstance(value, ConsumerGroupValue):
        return msgpack.packb([CONSUMER_GROUP_VALUE_VERSION, value.state], use_bin_type=True)
    return msgpack.packb([GROUP_VALUE_VERSION, value.protocol_type, value.generation,
                          value.protocol, value.leader, value.current_state_timestamp,
                          [_member_fields(m) for m in value.members]], use_bin_type=True)


def decode_value(key: RecordKey, data: bytes | None) -> RecordValue | None:
    """The value for `key`; None for a tombstone."""
    if data is None:
        return None
    try:
        fields = msgpack.unpackb(data)
        if isinstance(key, OffsetKey):
            if fields[0] != OFFSET_VALUE_VERSION:
                raise OffsetsRecordError(f"unknown offset value version {fields[0]}")
            return OffsetValue(int(fields[1]), int(fields[2]), str(fields[3]), int(fields[4]),
                               int(fields[5]))
        if isinstance(key, ConsumerGroupKey):
            if fields[0] != CONSUMER_GROUP_VALUE_VERSION:
                raise OffsetsRecordError(f"unknown consumer group value version {fields[0]}")
            return ConsumerGroupValue(fields[1])
        if fields[0] != GROUP_VALUE_VERSION:
            raise OffsetsRecordError(f"unknown group value version {fields[0]}")
        members = tuple(MemberValue(str(m[0]), m[1], str(m[2]), str(m[3]), int(m[4]), int(m[5]),
                                    bytes(m[6]), bytes(m[7])) for m in fields[6])
        return GroupValue(str(fields[1]), int(fields[2]), fields[3], fields[4], int(fields[5]),
                          members)
    except (ValueError, TypeError, IndexError, msgpack.UnpackException) as exc:
        if isinstance(exc, OffsetsRecordError):
            raise
        raise OffsetsRecordError(f"unreadable __consumer_offsets value: {exc}") from None


Entry = tuple[RecordKey, Union[RecordValue, None]]


def build_batch(entries: Sequence[Entry], now_ms: int,
                producer: tuple[int, int] | None = None, base_sequence: int = 0) -> bytes:
    """One uncompressed RecordBatch holding `entries` in order (offsets assigned by the log);
    with `producer` (id, epoch), a transactional batch of that producer starting at
    `base_sequence` (the leader checks it as it checks a client's)."""
    if not entries:
        raise ValueError("a batch needs at least one entry")
    records = [Record(None, now_ms, encode_key(key), encode_value(value))
               for key, value in entries]
    if producer is None:
        return encode_batch(records)
    return encode_batch(records, producer_id=producer[0], producer_epoch=producer[1],
                        base_sequence=base_sequence, is_transactional=True)


@dataclass(frozen=True, slots=True)
class OffsetsTxnMarker:
    """A transaction marker (control batch) in `__consumer_offsets`: the producer's pending
    offset commits become visible (commit) or are dropped."""

    producer_id: int
    committed: bool


# Control record keys: int16 version, int16 type (0 ABORT, 1 COMMIT).
_CONTROL_COMMIT = 1


def _marker_of(batch: RecordBatch) -> OffsetsTxnMarker | None:
    for record in batch.records:
        key = record.key
        if key is not None and len(key) >= 4:
            return OffsetsTxnMarker(batch.header.producer_id,
                                    int.from_bytes(key[2:4], "big", signed=True) == _CONTROL_COMMIT)
    return None


def iter_log(data: bytes | bytearray | memoryview,
             on_unreadable: Callable[[int, OffsetsRecordError], None] | None = None,
             ) -> Iterator[tuple[int, RecordKey, RecordValue | None, int]
                           | OffsetsTxnMarker]:
    """As `iter_entries`, for a replay that honours transactions: (offset, key, value,
    producer id) per record, the producer id -1 unless the record belongs to a transaction,
    and an `OffsetsTxnMarker` per control batch."""
    pos = 0
    while pos < len(data):
        header = parse_header(data, pos)
        end = pos + header.size
        if header.is_control:
            try:
                marker = _marker_of(decode_batch(data, pos))
            except RecordsError:
                marker = None
            if marker is not None:
                yield marker
            pos = end
            continue
        producer = header.producer_id if header.is_transactional else -1
        for offset, key, value in iter_entries(bytes(data[pos:end]), on_unreadable):
            yield offset, key, value, producer
        pos = end


def iter_entries(data: bytes | bytearray | memoryview,
                 on_unreadable: Callable[[int, OffsetsRecordError], None] | None = None,
                 ) -> Iterator[tuple[int, RecordKey, RecordValue | None]]:
    """(offset, key, value) of every record in `data` (whole batches; control batches and
    keyless records are skipped, as Kafka's loader does).

    A record whose key or value cannot be decoded, or a batch that fails its CRC or cannot
    be decoded, raises; with `on_unreadable` it is reported there (with its offset, a
    batch's base offset) and skipped, so one bad record does not cost the rest of the log.
    A batch header that cannot be parsed always raises CorruptRecordError: nothing after it
    can be found.
    """
    pos = 0
    while pos < len(data):
        header = parse_header(data, pos)
        try:
            batch: RecordBatch | None = decode_batch(data, pos)
        except RecordsError as exc:
            if on_unreadable is None:
                raise
            on_unreadable(header.base_offset, OffsetsRecordError(
                f"unreadable batch of offsets {header.base_offset}-{header.last_offset}: {exc}"))
            batch = None
        pos += header.size
        if batch is None or batch.header.is_control:
            continue
        for record in batch.records:
            if record.key is None:
                continue
            offset = record.offset or 0
            try:
                key = decode_key(record.key)
                value = decode_value(key, record.value)
            except OffsetsRecordError as exc:
                if on_unreadable is None:
                    raise
                on_unreadable(offset, exc)
                continue
            yield offset, key, value
