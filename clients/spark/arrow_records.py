"""Fetched record batches straight into ``pyarrow.RecordBatch``es (pure, no I/O).

No Record objects and no per-record bytes: the batches of one fetch answer are walked in
Python (headers, CRCs, transactions), their records sections laid out in one buffer, and
``record_fields`` decodes every record's fields at once; Arrow then gathers keys, values and
headers out of that buffer in C.
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
    BatchHeader,
    crc32c,
    parse_header,
    peek_batch_size,
)
from clients.spark.record_fields import HeaderBounds, RecordFields, gather, int_array, \
    walk_records
from clients.spark.schema import ARROW_HEADER_TYPE, ARROW_HEADERS_TYPE, ARROW_TIMESTAMP_TYPE, \
    arrow_schema
from clients.varint import VarintError, decode_unsigned_varint

_CONTROL_KEY = struct.Struct(">hh")
# Typed scalars: pyarrow.compute's wrapper is slow to convert Python numbers.
_ONE = pa.scalar(1, pa.int64())
_MICROS_PER_MILLI = pa.scalar(1000, pa.int64())


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


@dataclass
class _Section:
    """The records section of one data batch: ``buffer[lo:hi]`` (decompressed if need be)."""

    buffer: bytes
    lo: int
    hi: int
    header: BatchHeader


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
    sections: list[_Section] = []
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
        if header.next_offset <= next_offset:
            pos = batch_end
            continue
        if header.base_offset >= end:
            next_offset = end
            break
        section = pos + BATCH_HEADER_SIZE
        if header.is_control:
            if txn_filter is not None and header.records_count:
                _apply_control(txn_filter, raw, section, batch_end, header, topic, partition)
        elif not (txn_filter is not None and header.is_transactional
                  and txn_filter.skips(header.producer_id, header.next_offset - 1)):
            codec = header.attributes & COMPRESSION_MASK
            if codec:
                plain = _compression.decompress(codec, memoryview(raw)[section:batch_end],
                                                max_decompressed_size)
                sections.append(_Section(plain, 0, len(plain), header))
            else:
                sections.append(_Section(raw, section, batch_end, header))
        next_offset = header.next_offset
        pos = batch_end
    try:
        batch = _to_record_batch(topic, partition, sections, start, end, include_headers)
    except (VarintError, IndexError) as exc:
        raise CorruptRecordError(f"malformed record in a batch of {topic}-{partition}: "
                                 f"{exc}") from None
    return DecodedFetch(batch, min(next_offset, end), truncated)


def _apply_control(txn_filter: TransactionFilter, raw: bytes, section: int, batch_end: int,
                   header: BatchHeader, topic: str, partition: int) -> None:
    """The marker of a control batch: its single record's key is (version, type)."""
    try:
        pos = section
        _, pos = decode_unsigned_varint(raw, pos, 5)           # record length
        pos += 1                                               # attributes
        for _ in range(2):                                     # timestamp and offset deltas
            _, pos = decode_unsigned_varint(raw, pos, 10)
        z, pos = decode_unsigned_varint(raw, pos, 5)
    except (VarintError, IndexError):
        raise CorruptRecordError(f"malformed control batch at offset {header.base_offset} "
                                 f"of {topic}-{partition}") from None
    key_length = (z >> 1) ^ -(z & 1)
    if key_length >= _CONTROL_KEY.size and pos + key_length <= batch_end:
        _, control_type = _CONTROL_KEY.unpack_from(raw, pos)
        txn_filter.end_marker(header.producer_id, control_type)


def _one_buffer(sections: list[_Section]) -> bytes:
    """All sections in one buffer (in place when they all lie in the fetched bytes)."""
    first = sections[0].buffer
    if all(s.buffer is first for s in sections):
        return first
    joined = b"".join(memoryview(s.buffer)[s.lo:s.hi] for s in sections)
    pos = 0
    for s in sections:
        s.lo, s.hi, pos = pos, pos + s.hi - s.lo, pos + s.hi - s.lo
    return joined


def _to_record_batch(topic: str, partition: int, sections: list[_Section], start: int,
                     end: int, include_headers: bool) -> pa.RecordBatch | None:
    if not sections:
        return None
    data = _one_buffer(sections)
    starts, ends = array("i"), array("i")
    base_offsets, base_times, time_types = array("q"), array("q"), array("i")
    kinds = set()
    for s in sections:
        count = s.header.records_count
        if count <= 0:
            continue
        first = len(starts)
        last_end = walk_records(data, s.lo, s.hi, count, starts)
        ends.extend(starts[first + 1:])
        ends.append(last_end)
        log_append = s.header.is_log_append_time
        kinds.add(log_append)
        base_offsets.extend(array("q", [s.header.base_offset]) * count)
        # LogAppendTime: every record carries the batch's max timestamp.
        base_times.extend(array("q", [s.header.max_timestamp if log_append
                                      else s.header.base_timestamp]) * count)
        time_types.extend(array("i", [1 if log_append else 0]) * count)
    if not starts:
        return None
    fields = RecordFields.decode(data, starts, ends, include_headers)
    offsets = pc.add(int_array(base_offsets), fields.offset_delta)
    millis = int_array(base_times)
    if kinds == {False}:
        millis = pc.add(millis, fields.timestamp_delta)
    elif kinds == {False, True}:
        create_time = pc.subtract(_ONE, int_array(time_types).cast(pa.int64()))
        millis = pc.add(millis, pc.multiply(fields.timestamp_delta, create_time))
    types = int_array(time_types)
    bounds = pc.min_max(offsets)
    if bounds["min"].as_py() < start or bounds["max"].as_py() >= end:
        keep = pc.and_(pc.greater_equal(offsets, pa.scalar(start, pa.int64())),
                       pc.less(offsets, pa.scalar(end, pa.int64())))
        fields = fields.filtered(keep)
        offsets, millis, types = offsets.filter(keep), millis.filter(keep), types.filter(keep)
    n = len(offsets)
    if n == 0:
        return None
    buffer = pa.py_buffer(data)
    columns = [gather(buffer, fields.key_lo, fields.key_hi, fields.key_present, pa.binary()),
               gather(buffer, fields.value_lo, fields.value_hi, fields.value_present,
                      pa.binary()),
               pa.repeat(pa.scalar(topic, pa.string()), n),
               pa.repeat(pa.scalar(partition, pa.int32()), n),
               offsets,
               pc.multiply(millis, _MICROS_PER_MILLI).cast(ARROW_TIMESTAMP_TYPE),
               types]
    if include_headers:
        columns.append(_headers_column(data, buffer, fields))
    return pa.RecordBatch.from_arrays(columns, schema=arrow_schema(include_headers))


def _headers_column(data: bytes, buffer: pa.Buffer, fields: RecordFields) -> pa.Array:
    """Each record's headers."""
    assert fields.header_count is not None
    list_offsets = pa.concat_arrays([pa.array([0], pa.int64()),
                                     pc.cumulative_sum(fields.header_count)])
    if list_offsets[-1].as_py():
        bounds = HeaderBounds.decode(data, fields, list_offsets)
        keys = gather(buffer, bounds.key_lo, bounds.key_hi, None, pa.string())
        values = gather(buffer, bounds.value_lo, bounds.value_hi, bounds.value_present,
                        pa.binary())
    else:
        keys, values = pa.array([], pa.string()), pa.array([], pa.binary())
    structs = pa.StructArray.from_arrays([keys, values], fields=list(ARROW_HEADER_TYPE))
    return pa.ListArray.from_arrays(list_offsets.cast(pa.int32()), structs,
                                    type=ARROW_HEADERS_TYPE)
