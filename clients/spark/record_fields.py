"""The fields of many records at once, with Arrow compute kernels (pure, no I/O).

A record starts with its length, so where record i+1 starts depends on record i: finding the
starts is the one loop that runs per record in Python (``walk_records``). Everything else is
decoded for all records of a fetch together: a varint is read byte by byte over an array of
positions (``take`` from the bytes viewed as uint8), so the kernels run once per byte of the
longest varint, not once per record. Keys, values and header fields are then gathered out of
the buffer by their bounds in C, never as per-record Python objects.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc

from clients.records.errors import CorruptRecordError
from clients.varint import decode_unsigned_varint


def _kernel(name: str) -> Callable[..., pa.Array]:
    # Calling the function object directly skips pyarrow.compute's per-call wrapper, which
    # costs more than the kernels themselves on arrays of a few thousand positions.
    call = pc.get_function(name).call
    return lambda *args: call(list(args))


_take, _add, _mul = _kernel("take"), _kernel("add"), _kernel("multiply")
_and, _or, _xor = _kernel("bit_wise_and"), _kernel("bit_wise_or"), _kernel("bit_wise_xor")
_shl, _shr, _neg = _kernel("shift_left"), _kernel("shift_right"), _kernel("negate")
_ge, _gt = _kernel("greater_equal"), _kernel("greater")
_min, _max = _kernel("min_element_wise"), _kernel("max_element_wise")
_if_else = _kernel("if_else")

_U64 = [pa.scalar(v, pa.uint64()) for v in range(64)]
_U127, _U128 = pa.scalar(127, pa.uint64()), pa.scalar(128, pa.uint64())
_I64 = [pa.scalar(v, pa.int64()) for v in range(10)]
_I0, _I1, _I2 = _I64[:3]
_MAX_VARINT_BYTES = 10

_arange_cache = pa.array([], pa.int64())


def arange(n: int) -> pa.Array:
    """0, 1, ..., n-1 as int64 (a slice of one cached array)."""
    global _arange_cache
    if len(_arange_cache) < n:
        _arange_cache = int_array(array("q", range(max(n, 2 * len(_arange_cache)))))
    return _arange_cache.slice(0, n)


def int_array(values: array) -> pa.Array:
    """An ``array('i')`` or ``array('q')`` as an Arrow array, without copying."""
    type_ = pa.int32() if values.itemsize == 4 else pa.int64()
    return pa.Array.from_buffers(type_, len(values), [None, pa.py_buffer(values)])


def _record_sizes() -> list[int]:
    """Indexed by a record's first two bytes: its whole size when its length takes one or
    two varint bytes (lengths below 8192), else -1. Equal sizes share one int object."""
    shared = list(range(2 + (0x3FFF >> 1) + 1))
    table = [-1] * 0x10000
    for first in range(0x100):
        if first < 0x80:
            size = shared[1 + (first >> 1)]
            table[first << 8:(first + 1) << 8] = [size] * 0x100
        else:
            for second in range(0x80):
                table[(first << 8) | second] = shared[2 + (((first & 0x7F) | (second << 7)) >> 1)]
    return table


_RECORD_SIZES = _record_sizes()


def walk_records(data: bytes, pos: int, section_end: int, count: int, starts: array) -> int:
    """Append where each of ``count`` records from ``pos`` starts; returns where the last
    one ends. Lengths are read as if non-negative: ``RecordFields`` checks their sign."""
    append = starts.append
    sizes = _RECORD_SIZES
    for _ in range(count):
        append(pos)
        # One lookup of the first two bytes instead of decoding the length varint.
        size = sizes[(data[pos] << 8) | data[pos + 1]]
        if size < 0:
            length, body = decode_unsigned_varint(data, pos, _MAX_VARINT_BYTES)
            size = body - pos + (length >> 1)
        pos += size
    if pos > section_end:
        raise CorruptRecordError("record runs past the end of its batch")
    return pos


def _varints(data: pa.Array, pos: pa.Array) -> tuple[pa.Array, pa.Array]:
    """The unsigned varints at ``pos`` (int64) in ``data`` (uint8), and their sizes."""
    byte = _take(data, pos).cast(pa.uint64())
    value = _and(byte, _U127)
    more = _ge(byte, _U128)
    size = more.cast(pa.int64())
    last = len(data) - 1
    top = None
    for k in range(1, _MAX_VARINT_BYTES):
        if not more.true_count:
            return value, _add(size, _I1)
        # Byte k is read at every position, and counts as zero where the varint has ended;
        # near the end of the buffer such positions are clamped to stay inside it. (A varint
        # that really runs past the buffer then reads garbage, and the record's end check
        # refuses it.)
        at = _add(pos, _I64[k])
        if top is None:
            top = pc.max(pos).as_py()
        if top + k > last:
            at = _min(at, pa.scalar(last, pa.int64()))
        byte = _if_else(more, _take(data, at).cast(pa.uint64()), _U64[0])
        value = _or(value, _shl(_and(byte, _U127), _U64[7 * k]))
        more = _ge(byte, _U128)
        size = _add(size, more.cast(pa.int64()))
    if more.true_count:
        raise CorruptRecordError("varint longer than 10 bytes")
    return value, _add(size, _I1)


def _signed(zigzag: pa.Array) -> pa.Array:
    """Zigzag-decoded int64 values of unsigned varints."""
    half = _shr(zigzag, _U64[1]).cast(pa.int64())
    return _xor(half, _neg(_and(zigzag, _U64[1]).cast(pa.int64())))


@dataclass
class RecordFields:
    """Per record: where it ends, its offset and timestamp deltas, key and value bounds
    (lo, hi) and whether each is present, and where its headers start and how many."""

    record_end: pa.Array
    offset_delta: pa.Array
    timestamp_delta: pa.Array
    key_lo: pa.Array
    key_hi: pa.Array
    key_present: pa.Array
    value_lo: pa.Array
    value_hi: pa.Array
    value_present: pa.Array
    header_pos: pa.Array | None
    header_count: pa.Array | None

    @classmethod
    def decode(cls, data: bytes, starts: array, ends: array, with_headers: bool
               ) -> RecordFields:
        """The fields of the records at ``starts`` (each ending at ``ends``) in ``data``."""
        bytes_ = pa.Array.from_buffers(pa.uint8(), len(data), [None, pa.py_buffer(data)])
        limit = pa.scalar(len(data), pa.int64())
        record_end = int_array(ends).cast(pa.int64())
        length, size = _varints(bytes_, int_array(starts).cast(pa.int64()))
        if _and(length, _U64[1]).cast(pa.bool_()).true_count:
            raise CorruptRecordError("negative record length")
        pos = _add(_add(int_array(starts).cast(pa.int64()), size), _I1)  # past attributes
        timestamp_delta, size = _varints(bytes_, pos)
        pos = _add(pos, size)
        offset_delta, size = _varints(bytes_, pos)
        pos = _add(pos, size)
        bounds = []
        for _ in ("key", "value"):
            length, size = _varints(bytes_, pos)
            length = _signed(length)
            lo = _add(pos, size)
            # Clamped so that a corrupt length cannot overflow; the end check catches it.
            pos = _add(lo, _min(_max(length, _I0), limit))
            bounds.append((lo, pos, _ge(length, _I0)))
        header_pos = header_count = None
        if with_headers:
            count, size = _varints(bytes_, pos)
            header_count = _max(_signed(count), _I0)
            header_pos = _add(pos, size)
            pos = header_pos
        if _gt(pos, record_end).true_count:
            raise CorruptRecordError("a record's fields overrun its length")
        (key_lo, key_hi, key_present), (value_lo, value_hi, value_present) = bounds
        return cls(record_end, _signed(offset_delta), _signed(timestamp_delta), key_lo, key_hi,
                   key_present, value_lo, value_hi, value_present, header_pos, header_count)

    def filtered(self, keep: pa.Array) -> RecordFields:
        """Only the records where ``keep`` is true."""
        return RecordFields(*(None if a is None else a.filter(keep) for a in (
            self.record_end, self.offset_delta, self.timestamp_delta, self.key_lo, self.key_hi,
            self.key_present, self.value_lo, self.value_hi, self.value_present,
            self.header_pos, self.header_count)))


@dataclass
class HeaderBounds:
    """Every header of the records, in buffer order: key and value bounds, and whether each
    value is present (keys are never null)."""

    key_lo: pa.Array
    key_hi: pa.Array
    value_lo: pa.Array
    value_hi: pa.Array
    value_present: pa.Array

    @classmethod
    def decode(cls, data: bytes, fields: RecordFields, list_offsets: pa.Array
               ) -> HeaderBounds:
        """Slot by slot: the first header of every record that has one, then the second of
        every record with two, ...; ``list_offsets`` (where each record's headers begin in
        the result) puts them back in record order."""
        assert fields.header_pos is not None and fields.header_count is not None
        bytes_ = pa.Array.from_buffers(pa.uint8(), len(data), [None, pa.py_buffer(data)])
        limit = pa.scalar(len(data), pa.int64())
        pos, count, end = fields.header_pos, fields.header_count, fields.record_end
        first = _take(list_offsets, arange(len(pos)))
        slots: list[list[pa.Array]] = []
        for slot in range(pc.max(count).as_py()):
            active = _gt(count, pa.scalar(slot, pa.int64()))
            if active.true_count < len(active):
                pos, count, end, first = (a.filter(active) for a in (pos, count, end, first))
            length, size = _varints(bytes_, pos)
            length = _signed(length)
            if pc.min(length).as_py() < 0:
                raise CorruptRecordError("header key is null")
            key_lo = _add(pos, size)
            key_hi = _add(key_lo, _min(length, limit))
            length, size = _varints(bytes_, key_hi)
            length = _signed(length)
            value_lo = _add(key_hi, size)
            pos = _add(value_lo, _min(_max(length, _I0), limit))
            if _gt(pos, end).true_count:
                raise CorruptRecordError("record headers overrun the record")
            target = _add(first, pa.scalar(slot, pa.int64()))
            slots.append([target, key_lo, key_hi, value_lo, pos, _ge(length, _I0)])
        columns = [pa.concat_arrays([slot[i] for slot in slots]) for i in range(6)]
        order = pc.sort_indices(columns[0])
        return cls(*(_take(column, order) for column in columns[1:]))


def gather(buffer: pa.Buffer, lo: pa.Array, hi: pa.Array, present: pa.Array | None,
           type_: pa.DataType) -> pa.Array:
    """The bytes ``[lo[i], hi[i])`` of ``buffer`` as a binary (or string) array; null where
    ``present`` is false. Bounds must be in buffer order, each ``hi[i] <= lo[i+1]``.

    Interleaved (lo0, hi0, lo1, hi1, ...) the bounds are the offsets of one binary array
    over the buffer whose even-numbered elements are the wanted ones: one ``take``."""
    n = len(lo)
    if n == 0:
        return pa.array([], type_)
    j = arange(2 * n)
    interleave = _add(_shr(j, _I1), _mul(_and(j, _I1), pa.scalar(n, pa.int64())))
    offsets = _take(pa.concat_arrays([lo, hi]).cast(pa.int32()), interleave)
    segments = pa.Array.from_buffers(pa.binary(), 2 * n - 1,
                                     [None, offsets.buffers()[1], buffer])
    taken = _take(segments, _mul(arange(n), _I2))
    validity = None
    if present is not None and present.true_count < n:
        validity = present.buffers()[1] if present.offset == 0 else \
            pa.concat_arrays([present]).buffers()[1]
    return pa.Array.from_buffers(type_, n, [validity, taken.buffers()[1], taken.buffers()[2]])
