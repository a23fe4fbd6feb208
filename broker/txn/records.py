"""Records of `__transaction_state`, in Kafka's layout (TransactionLogKey and
TransactionLogValue, version 0): the key is the transactional id, the value its state; a
null value (tombstone) removes an expired id once the log is compacted.
"""

from __future__ import annotations

import struct
from typing import Callable, Iterator

from broker.txn.metadata import TxnMetadata, TxnState
from clients.records.batch import Record, decode_batch, encode_batch
from clients.records.errors import RecordsError
from clients.records.header import parse_header

KEY_VERSION = 0
VALUE_VERSION = 0

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_VALUE_HEAD = struct.Struct(">hqhib")
_TIMES = struct.Struct(">qq")


class TxnRecordError(ValueError):
    """A `__transaction_state` record this code cannot read."""


def _string(value: str) -> bytes:
    data = value.encode()
    return _I16.pack(len(data)) + data


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.pos = 0

    def take(self, layout: struct.Struct) -> tuple:
        if self.pos + layout.size > len(self.data):
            raise TxnRecordError("record too short")
        values = layout.unpack_from(self.data, self.pos)
        self.pos += layout.size
        return values

    def string(self) -> str:
        (length,) = self.take(_I16)
        if length < 0 or self.pos + length > len(self.data):
            raise TxnRecordError("bad string length")
        value = bytes(self.data[self.pos:self.pos + length]).decode()
        self.pos += length
        return value


def encode_key(transactional_id: str) -> bytes:
    return _I16.pack(KEY_VERSION) + _string(transactional_id)


def decode_key(data: bytes) -> str:
    reader = _Reader(data)
    (version,) = reader.take(_I16)
    if version != KEY_VERSION:
        raise TxnRecordError(f"unknown transaction log key version {version}")
    return reader.string()


def encode_value(metadata: TxnMetadata) -> bytes:
    """The state record; a transaction's partitions are listed only while it is not
    complete, as Kafka writes them."""
    by_topic: dict[str, list[int]] = {}
    if metadata.state not in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
        for topic, partition in sorted(metadata.partitions):
            by_topic.setdefault(topic, []).append(partition)
    out = [_VALUE_HEAD.pack(VALUE_VERSION, metadata.producer_id, metadata.producer_epoch,
                            metadata.timeout_ms, metadata.state.value),
           _I32.pack(len(by_topic))]
    for topic, partitions in by_topic.items():
        out.append(_string(topic))
        out.append(_I32.pack(len(partitions)))
        out.extend(_I32.pack(p) for p in partitions)
    out.append(_TIMES.pack(metadata.last_update_ms, metadata.start_ms))
    return b"".join(out)


def decode_value(transactional_id: str, data: bytes) -> TxnMetadata:
    reader = _Reader(data)
    version, producer_id, epoch, timeout_ms, state_byte = reader.take(_VALUE_HEAD)
    if version != VALUE_VERSION:
        raise TxnRecordError(f"unknown transaction log value version {version}")
    try:
        state = TxnState(state_byte)
    except ValueError:
        raise TxnRecordError(f"unknown transaction state {state_byte}") from None
    partitions: set[tuple[str, int]] = set()
    (topics,) = reader.take(_I32)
    for _ in range(max(topics, 0)):
        topic = reader.string()
        (count,) = reader.take(_I32)
        for _ in range(count):
            partitions.add((topic, reader.take(_I32)[0]))
    last_update_ms, start_ms = reader.take(_TIMES)
    return TxnMetadata(transactional_id, producer_id, epoch, timeout_ms, state,
                       frozenset(partitions), start_ms, last_update_ms)


def build_batch(transactional_id: str, metadata: TxnMetadata | None, now_ms: int) -> bytes:
    """One batch with the id's record (a tombstone for None)."""
    value = None if metadata is None else encode_value(metadata)
    return encode_batch([Record(None, now_ms, encode_key(transactional_id), value)])


def iter_states(data: bytes, on_unreadable: Callable[[int, Exception], None]
                ) -> Iterator[tuple[str, TxnMetadata | None]]:
    """(transactional id, metadata or None for a tombstone) of each record in `data`
    (whole batches), in log order; undecodable records go to `on_unreadable`."""
    pos = 0
    while pos < len(data):
        header = parse_header(data, pos)
        try:
            batch = decode_batch(data, pos)
        except RecordsError as exc:
            on_unreadable(header.base_offset, exc)
            batch = None
        pos += header.size
        if batch is None or batch.header.is_control:
            continue
        for record in batch.records:
            if record.key is None:
                continue
            try:
                transactional_id = decode_key(record.key)
                yield transactional_id, (None if record.value is None
                                         else decode_value(transactional_id, record.value))
            except (TxnRecordError, UnicodeDecodeError) as exc:
                on_unreadable(record.offset or 0, exc)
