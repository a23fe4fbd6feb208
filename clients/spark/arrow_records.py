"""Fetched record batches straight into ``pyarrow.RecordBatch``es (pure, no I/O).

No Record objects and no per-record bytes: one pass over each batch's records section notes
where every key and value lies (and the offsets and timestamps) in flat integer arrays; Arrow
then gathers the bytes in C. The bounds of the key (or value) of record i are entries
2i and 2i+1 of a monotonic list of positions, so viewed as one binary array over the
section, the keys are its even-numbered elements: one ``take`` copies them out.
"""

from __future__ import annotations

import struct
from array import array
from dataclasses import dataclass, field
from typing import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from clients.records import compression as _compression
from clients.records.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from clients.records.control import ABORT
from clients.records.errors import CorruptRecordError
from clients.records.header import (
    BATCH_HEADER_SIZE,
    COMPRESSION_MASK,
    crc32c,
    parse_header,
    peek_batch_size,
)
from clients.spark.schema import (
    ARROW_HEADER_TYPE,
    ARROW_TIMESTAMP_TYPE,
    arrow_schema,
)
from clients.varint import VarintError, decode_unsigned_varint

_CONTROL_KEY = struct.Struct(">hh")


class _Columns:
    """Growing column data of one chunk (a bytes object holding record sections)."""

    __slots__ = ("data", "keys", "key_valid", "values", "value_valid", "offsets",
                 "timestamps", "ts_types", "header_counts", "header_keys", "header_values",
                 "header_value_valid")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.keys = array("i")
        self.key_valid = bytearray()
        self.values = array("i")
        self.value_valid = bytearray()
        self.offsets = array("q")
        self.timestamps = array("q")
        self.ts_types = array("i")
        self.header_counts = array("i")
        self.header_keys = array("i")
        self.header_values = array("i")
        self.header_value_valid = bytearray()


@dataclass
class TransactionFilter:
    """read_committed: drops batches of aborted transactions, as Kafka's consumer does, from
    the fetch answers' aborted-transaction lists. Keeps state across fetches of a partition."""

    pending: list[tuple[int, int]] = field(default_factory=list)  # (first_offset, pid)
    aborted: set[int] = field(default_factory=set)

    def add(self, aborted_transactions: Iterable[dict] | None) -> None:
        for entry in aborted_transactions or ():
            self.pending.append((entry["first_offset"], entry["producer_id"]))
        self.pending.sort()

    def skips(self, producer_id: int, last_offset: int) -> bool:
        """Whether a transactional data batch ending at ``last_offset`` was aborted."""
        while self.pending and self.pending[0][0] <= last_offset:
            self.aborted.add(self.pending.pop(0)[1])
        return producer_id in self.aborted

    def end_marker(self, producer_id: int, control_type: int) -> None:
        if control_type == ABORT:
            self.aborted.discard(producer_id)


@dataclass
class DecodedFetch:
    """What one partition's fetched bytes held in ``[start, end)``."""

    batch: pa.RecordBatch | None
    next_offset: int   # where the next fetch starts
    truncated: bool    # the data ended in a partial batch


def _uvarint64(d: bytes, pos: int) -> tuple[int, int]:
    return decode_unsigned_varint(d, pos, 10)


def _scan_records(c: _Columns, pos: int, section_end: int, count: int, base_offset: int,
                  base_ts: int, append_ts: int | None, start: int, end: int,
                  with_headers: bool) -> bool:
    """Note every record of one batch section in ``c``; False once an offset reaches ``end``."""
    d = c.data
    keys, values = c.keys.append, c.values.append
    key_valid, value_valid = c.key_valid.append, c.value_valid.append
    offsets, timestamps = c.offsets.append, c.timestamps.append
    uvarint = _uvarint64
    for _ in range(count):
        # Record length (usually two bytes), then one attributes byte.
        b = d[pos]
        if b < 0x80:
            z = b
            pos += 1
        elif d[pos + 1] < 0x80:
            z = (b & 0x7F) | (d[pos + 1] << 7)
            pos += 2
        else:
            z, pos = uvarint(d, pos)
        record_end = pos + ((z >> 1) ^ -(z & 1))
        if record_end > section_end:
            raise CorruptRecordError("record runs past the end of its batch")
        pos += 1
        b = d[pos]
        if b < 0x80:
            z = b
            pos += 1
        elif d[pos + 1] < 0x80:
            z = (b & 0x7F) | (d[pos + 1] << 7)
            pos += 2
        else:
            z, pos = uvarint(d, pos)
        ts_delta = (z >> 1) ^ -(z & 1)
        # Offset deltas past 8191 take three bytes: big batches have thousands of those.
        b = d[pos]
        if b < 0x80:
            z = b
            pos += 1
        elif d[pos + 1] < 0x80:
            z = (b & 0x7F) | (d[pos + 1] << 7)
            pos += 2
        elif d[pos + 2] < 0x80:
            z = (b & 0x7F) | ((d[pos + 1] & 0x7F) << 7) | (d[pos + 2] << 14)
            pos += 3
        else:
            z, pos = uvarint(d, pos)
        offset = base_offset + ((z >> 1) ^ -(z & 1))
        if offset < start:
            pos = record_end
            continue
        if offset >= end:
            return False
        b = d[pos]
        if b < 0x80:
            z = b
            pos += 1
        else:
            z, pos = uvarint(d, pos)
        length = (z >> 1) ^ -(z & 1)
        keys(pos)
        if length < 0:
            keys(pos)
            key_valid(0)
        else:
            pos += length
            keys(pos)
            key_valid(1)
        b = d[pos]
        if b < 0x80:
            z = b
            pos += 1
        elif d[pos + 1] < 0x80:
            z = (b & 0x7F) | (d[pos + 1] << 7)
            pos += 2
        else:
            z, pos = uvarint(d, pos)
        length = (z >> 1) ^ -(z & 1)
        values(pos)
        if length < 0:
            values(pos)
            value_valid(0)
        else:
            pos += length
            values(pos)
            value_valid(1)
        if pos > record_end:
            raise CorruptRecordError(f"record at offset {offset} overruns its length")
        offsets(offset)
        timestamps(base_ts + ts_delta if append_ts is None else append_ts)
        if with_headers:
            _scan_headers(c, pos, record_end)
        pos = record_end
    return True


def _scan_headers(c: _Columns, pos: int, record_end: int) -> None:
    d = c.data
    count, pos = _uvarint64(d, pos)
    count = (count >> 1) ^ -(count & 1)
    c.header_counts.append(max(count, 0))
    for _ in range(count):
        z, pos = _uvarint64(d, pos)
        length = (z >> 1) ^ -(z & 1)
        if length < 0:
            raise CorruptRecordError("header key is null")
        c.header_keys.append(pos)
        pos += length
        c.header_keys.append(pos)
        z, pos = _uvarint64(d, pos)
        length = (z >> 1) ^ -(z & 1)
        c.header_values.append(pos)
        if length >= 0:
            pos += length
        c.header_values.append(pos)
        c.header_value_valid.append(1 if length >= 0 else 0)
    if pos > record_end:
        raise CorruptRecordError("record headers overrun the record")


def _gather(data_buffer: pa.Buffer, bounds: array, valid: bytearray,
            type_: pa.DataType) -> pa.Array:
    """The even-numbered segments of ``bounds`` over ``data_buffer`` as one array."""
    n = len(bounds) // 2
    if n == 0:
        return pa.array([], type=type_)
    segments = pa.Array.from_buffers(pa.binary(), len(bounds) - 1,
                                     [None, pa.py_buffer(bounds), data_buffer])
    picks = pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(array("i", range(0, 2 * n, 2)))])
    taken = pc.take(segments, picks)
    validity = None
    if valid.count(0):
        flags = pa.Array.from_buffers(pa.uint8(), n, [None, pa.py_buffer(valid)])
        validity = pc.not_equal(flags, 0).buffers()[1]
    return pa.Array.from_buffers(type_, n, [validity, taken.buffers()[1], taken.buffers()[2]])


def _headers_array(c: _Columns, chunk: pa.Buffer) -> pa.Array:
    keys = _gather(chunk, c.header_keys, bytearray(b"\x01") * (len(c.header_keys) // 2),
                   pa.string())
    values = _gather(chunk, c.header_values, c.header_value_valid, pa.binary())
    structs = pa.StructArray.from_arrays([keys, values], fields=list(ARROW_HEADER_TYPE))
    list_offsets = array("i", [0])
    total = 0
    for count in c.header_counts:
        total += count
        list_offsets.append(total)
    return pa.ListArray.from_arrays(
        pa.Array.from_buffers(pa.int32(), len(list_offsets), [None, pa.py_buffer(list_offsets)]),
        structs).cast(pa.list_(pa.field("element", ARROW_HEADER_TYPE)))


def _chunk_columns(c: _Columns, with_headers: bool) -> list[pa.Array]:
    chunk = pa.py_buffer(c.data)
    n = len(c.offsets)
    ms = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(c.timestamps)])
    columns = [
        _gather(chunk, c.keys, c.key_valid, pa.binary()),
        _gather(chunk, c.values, c.value_valid, pa.binary()),
        pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(c.offsets)]),
        pc.multiply(ms, 1000).cast(ARROW_TIMESTAMP_TYPE),
        pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(c.ts_types)]),
    ]
    if with_headers:
        columns.append(_headers_array(c, chunk))
    return columns


def decode_fetched(topic: str, partition: int, data: bytes | memoryview | None, start: int,
                   end: int, include_headers: bool, txn_filter: TransactionFilter | None = None,
                   *, verify_crc: bool = True,
                   max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> DecodedFetch:
    """The records of ``data`` (one partition's Fetch answer) with offsets in ``[start, end)``
    as one RecordBatch in the schema of Spark's Kafka source (None when there are none).

    Control batches and, with ``txn_filter``, aborted transactions advance the position but
    yield no rows. A partial last batch is left for the next fetch.
    """
    if not data:
        return DecodedFetch(None, start, False)
    raw = bytes(data)
    size_total = len(raw)
    chunks: list[_Columns] = []
    plain: _Columns | None = None  # uncompressed sections are read in place in ``raw``
    pos = 0
    next_offset = start
    truncated = False
    while pos < size_total:
        size = peek_batch_size(raw, pos)
        if size is None or size < BATCH_HEADER_SIZE or pos + size > size_total:
            truncated = True
            break
        header = parse_header(raw, pos)
        batch_end = pos + size
        if verify_crc and crc32c(memoryview(raw)[pos + 21:batch_end]) != header.crc:
            raise CorruptRecordError(f"CRC mismatch in the batch at offset {header.base_offset} "
                                     f"of {topic}-{partition}")
        last_offset = header.next_offset - 1
        if last_offset < next_offset:
            pos = batch_end
            continue
        section = pos + BATCH_HEADER_SIZE
        if header.is_control:
            if txn_filter is not None and header.records_count:
                _apply_control(txn_filter, raw, section, batch_end, header)
        elif not (txn_filter is not None and header.is_transactional
                  and txn_filter.skips(header.producer_id, last_offset)):
            codec = header.attributes & COMPRESSION_MASK
            if codec:
                columns = _Columns(_compression.decompress(
                    codec, memoryview(raw)[section:batch_end], max_decompressed_size))
                chunks.append(columns)
                sec_start, sec_end = 0, len(columns.data)
            else:
                if plain is None:
                    plain = _Columns(raw)
                    chunks.append(plain)
                elif chunks[-1] is not plain:
                    # Keep chunk order equal to offset order.
                    plain = _Columns(raw)
                    chunks.append(plain)
                columns = plain
                sec_start, sec_end = section, batch_end
            before = len(columns.offsets)
            try:
                more = _scan_records(columns, sec_start, sec_end, header.records_count,
                                     header.base_offset, header.base_timestamp,
                                     header.max_timestamp if header.is_log_append_time
                                     else None, start, end, include_headers)
            except (VarintError, IndexError) as exc:
                raise CorruptRecordError(f"malformed record in the batch at offset "
                                         f"{header.base_offset} of {topic}-{partition}: "
                                         f"{exc}") from None
            added = len(columns.offsets) - before
            columns.ts_types.extend(array("i", [1 if header.is_log_append_time else 0]) * added)
            if not more:
                next_offset = end
                break
        next_offset = max(next_offset, header.next_offset)
        pos = batch_end
    return DecodedFetch(_to_record_batch(topic, partition, chunks, include_headers),
                        min(next_offset, end), truncated)


def _apply_control(txn_filter: TransactionFilter, raw: bytes, section: int, batch_end: int,
                   header: object) -> None:
    """The marker of a control batch (its single record's key: version, type)."""
    columns = _Columns(raw)
    _scan_records(columns, section, batch_end, 1, 0, 0, None, 0, 1 << 62, False)
    if len(columns.keys) >= 2 and columns.key_valid[0]:
        key_start, key_end = columns.keys[0], columns.keys[1]
        if key_end - key_start >= _CONTROL_KEY.size:
            _, control_type = _CONTROL_KEY.unpack_from(raw, key_start)
            txn_filter.end_marker(header.producer_id, control_type)  # type: ignore[attr-defined]


def _to_record_batch(topic: str, partition: int, chunks: list[_Columns],
                     include_headers: bool) -> pa.RecordBatch | None:
    parts = [_chunk_columns(c, include_headers) for c in chunks if len(c.offsets)]
    if not parts:
        return None
    merged = [pa.concat_arrays([p[i] for p in parts]) if len(parts) > 1 else parts[0][i]
              for i in range(len(parts[0]))]
    n = len(merged[0])
    columns = [merged[0], merged[1], pa.repeat(pa.scalar(topic, pa.string()), n),
               pa.repeat(pa.scalar(partition, pa.int32()), n), merged[2], merged[3], merged[4]]
    if include_headers:
        columns.append(merged[5])
    return pa.RecordBatch.from_arrays(columns, schema=arrow_schema(include_headers))
