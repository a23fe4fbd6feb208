"""The RecordBatch v2 header: the broker's hot path, with no per-record work.

Layout of the 61-byte header (all big-endian)::

    0  base_offset              int64
    8  batch_length             int32   bytes after this field
    12 partition_leader_epoch   int32
    16 magic                    int8    (2)
    17 crc                      uint32  CRC32C of bytes [21, end of batch)
    21 attributes               int16
    23 last_offset_delta        int32
    27 base_timestamp           int64
    35 max_timestamp            int64
    43 producer_id              int64
    51 producer_epoch           int16
    53 base_sequence            int32
    57 records_count            int32

The broker reads this header, checks the CRC, stamps the base offset and partition leader
epoch (both outside the CRC span) and, for LogAppendTime topics, the max timestamp and
timestamp-type bit (inside the span, so the CRC is recomputed).
"""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import crc32c as _crc32c

from clients.records.errors import CorruptRecordError

BATCH_HEADER_SIZE = 61
LOG_OVERHEAD = 12  # base_offset + batch_length
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35
MAGIC_V2 = 2

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_OFFSET_LENGTH = struct.Struct(">qi")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC32C (Castagnoli) of ``data``."""
    return _crc32c.crc32c(data)


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The fixed fields of one RecordBatch v2, as read from the wire or a segment."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Total bytes of the batch, header included."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_MASK)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        # Sequences wrap at int32 max, as in Kafka.
        return (self.base_sequence + self.last_offset_delta) % (2**31)


def _check_fields(fields: tuple[int, ...], pos: int) -> None:
    """Validate raw header fields (in _HEADER order) before any object is built."""
    if fields[3] != MAGIC_V2:
        raise CorruptRecordError(f"unsupported record batch magic {fields[3]} at position {pos}")
    if fields[1] < BATCH_HEADER_SIZE - LOG_OVERHEAD:
        raise CorruptRecordError(f"batch length {fields[1]} too small at position {pos}")
    if fields[6] < 0 or fields[12] < 0:
        raise CorruptRecordError(f"negative record count or offset delta at position {pos}")


_FIELD_SETTERS = tuple(BatchHeader.__dict__[f.name].__set__ for f in dataclasses.fields(BatchHeader))


def _new_header(fields: tuple[int, ...], _new: Callable[..., Any] = object.__new__) -> BatchHeader:
    # Fills the slots directly: the frozen dataclass __init__ costs about twice as much, which
    # is a visible share of the per-batch cost of the CRC check at a megabyte per batch.
    header = _new(BatchHeader)
    for set_field, value in zip(_FIELD_SETTERS, fields):
        set_field(header, value)
    return header


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Read the header at ``pos``; raise CorruptRecordError if it is short or not magic 2."""
    if len(buf) - pos < BATCH_HEADER_SIZE:
        raise CorruptRecordError(f"batch header truncated at position {pos}")
    fields = _HEADER.unpack_from(buf, pos)
    _check_fields(fields, pos)
    return _new_header(fields)


def peek_batch_size(buf: bytes | bytearray | memoryview, pos: int = 0) -> int | None:
    """Size of the batch starting at ``pos`` from its first 12 bytes, or None if fewer remain."""
    if len(buf) - pos < LOG_OVERHEAD:
        return None
    _, length = _OFFSET_LENGTH.unpack_from(buf, pos)
    return LOG_OVERHEAD + length


def compute_crc(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> int:
    """CRC32C over the batch's checksummed span."""
    view = memoryview(buf)
    return crc32c(view[pos + ATTRIBUTES_OFFSET : pos + header.size])


def crc_is_valid(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> bool:
    return compute_crc(buf, pos, header) == header.crc


def iter_batches(
    buf: bytes | bytearray | memoryview, *, verify_crc: bool = True
) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) for each whole batch in ``buf``.

    Raises CorruptRecordError on a truncated batch, a bad magic, or (with ``verify_crc``) a
    CRC mismatch. The payload of a Produce request must consist of whole batches only.
    """
    end = len(buf)
    unpack = _HEADER.unpack_from
    checksum = _crc32c.crc32c
    pos = 0
    while pos < end:
        # parse_header and crc_is_valid, inlined: this loop is the broker's produce path.
        if end - pos < BATCH_HEADER_SIZE:
            raise CorruptRecordError(f"batch header truncated at position {pos}")
        fields = unpack(buf, pos)
        _check_fields(fields, pos)
        size = LOG_OVERHEAD + fields[1]
        if pos + size > end:
            raise CorruptRecordError(
                f"batch at position {pos} claims {size} bytes, only {end - pos} remain"
            )
        # A fresh view per batch: holding one across the yield would stop callers resizing buf.
        if verify_crc and checksum(memoryview(buf)[pos + ATTRIBUTES_OFFSET : pos + size]) != fields[4]:
            raise CorruptRecordError(f"CRC mismatch in batch at position {pos}")
        yield pos, _new_header(fields)
        pos += size


def stamp_offsets(buf: bytearray | memoryview, pos: int, base_offset: int, leader_epoch: int) -> None:
    """Write base offset and partition leader epoch in place (outside the CRC span)."""
    _INT64.pack_into(buf, pos, base_offset)
    _INT32.pack_into(buf, pos + 12, leader_epoch)


def stamp_log_append_time(
    buf: bytearray | memoryview, pos: int, header: BatchHeader, timestamp_ms: int
) -> None:
    """Mark the batch LogAppendTime with ``timestamp_ms`` and recompute its CRC, in place."""
    _INT16.pack_into(buf, pos + ATTRIBUTES_OFFSET, header.attributes | TIMESTAMP_TYPE_MASK)
    _INT64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, timestamp_ms)
    _UINT32.pack_into(buf, pos + CRC_OFFSET, compute_crc(buf, pos, header))


@dataclass(frozen=True, slots=True)
class AppendInfo:
    """Summary of a validated set of batches, as the log needs it for one append."""

    first_offset: int
    last_offset: int
    records_count: int
    max_timestamp: int
    offset_of_max_timestamp: int
    batches: int
    bytes: int


def assign_offsets(
    buf: bytearray,
    next_offset: int,
    leader_epoch: int,
    *,
    log_append_time_ms: int | None = None,
) -> AppendInfo:
    """Validate and stamp every batch in ``buf`` as the leader: offsets from ``next_offset``.

    One header read, one CRC check and one in-place stamp per batch; records are never parsed.
    Raises CorruptRecordError on any bad batch, leaving the caller to append nothing.
    """
    headers = list(iter_batches(buf, verify_crc=True))
    if not headers:
        raise CorruptRecordError("no record batch in payload")
    offset = next_offset
    count = 0
    max_ts = -1
    max_ts_offset = -1
    for pos, header in headers:
        stamp_offsets(buf, pos, offset, leader_epoch)
        if log_append_time_ms is not None:
            stamp_log_append_time(buf, pos, header, log_append_time_ms)
            ts = log_append_time_ms
        else:
            ts = header.max_timestamp
        last = offset + header.last_offset_delta
        if ts > max_ts:
            max_ts, max_ts_offset = ts, last
        count += header.records_count
        offset = last + 1
    return AppendInfo(next_offset, offset - 1, count, max_ts, max_ts_offset, len(headers), len(buf))
