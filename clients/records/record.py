"""One record inside a RecordBatch v2: the per-record varint codec.

Wire layout of a record (all varints zig-zag)::

    length          varint   bytes after this field
    attributes      int8     unused, 0
    timestampDelta  varlong  from the batch's base timestamp
    offsetDelta     varint   from the batch's base offset
    keyLength       varint   -1 for a null key
    key             bytes
    valueLength     varint   -1 for a null value
    value           bytes
    headersCount    varint
    headers         [headerKeyLength varint, headerKey utf-8,
                     headerValueLength varint (-1 for null), headerValue]

This is the client and tooling side (producer, consumer, compaction, dump-log); the broker's
produce and fetch paths never come here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence, overload

from clients.records.errors import CorruptRecordError
from clients.varint import VarintError, decode_unsigned_varint, encode_unsigned_varint

Header = tuple[str, bytes | None]

_MASK64 = 0xFFFFFFFFFFFFFFFF
# Zig-zag varints of values up to 2**14 (two bytes) are looked up instead of computed.
_SMALL_LIMIT = 1 << 14
_SMALL_VARINTS: list[bytes] = [encode_unsigned_varint(z) for z in range(_SMALL_LIMIT)]
_NULL_LENGTH = _SMALL_VARINTS[1]  # zig-zag(-1)
# The values of one- and two-byte zig-zag varints, by their raw (unsigned) value.
_ZIGZAG: tuple[int, ...] = tuple((z >> 1) ^ -(z & 1) for z in range(_SMALL_LIMIT))
_ATTRIBUTES = b"\x00"


@dataclass(slots=True)
class Record:
    """A record with absolute offset and timestamp.

    On encode an ``offset`` of None or -1 means "the next offset after the previous record".
    """

    offset: int | None
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


def _zz(value: int) -> bytes:
    """Zig-zag varint/varlong of ``value`` (range checks are the caller's job)."""
    z = ((value << 1) ^ (value >> 63)) & _MASK64
    if z < _SMALL_LIMIT:
        return _SMALL_VARINTS[z]
    return encode_unsigned_varint(z)


def _sized(data: bytes | None) -> list[bytes]:
    if data is None:
        return [_NULL_LENGTH]
    return [_zz(len(data)), data]


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[Header] = (),
) -> bytes:
    """Encode one record, length prefix included."""
    # Runs once per produced record: every varint is looked up in the one- and two-byte
    # table, and one that is not there (IndexError) takes the checked path. Zig-zag values
    # are never negative, so only a negative offset delta needs its own check here.
    if offset_delta < 0:
        raise ValueError(f"offset delta {offset_delta} out of int32 range")
    small = _SMALL_VARINTS
    try:
        ts = small[(timestamp_delta << 1) ^ (timestamp_delta >> 63)]
        od = small[offset_delta << 1]
        if key is None:
            key_length, key = _NULL_LENGTH, b""
        else:
            key_length = small[len(key) << 1]
        if value is None:
            value_length, value = _NULL_LENGTH, b""
        else:
            value_length = small[len(value) << 1]
        body = b"".join((_ATTRIBUTES, ts, od, key_length, key, value_length, value,
                         _encode_headers(headers) if headers else b"\x00"))
        return small[len(body) << 1] + body
    except IndexError:
        return _encode_record_checked(offset_delta, timestamp_delta, key, value, headers)


def _encode_record_checked(offset_delta: int, timestamp_delta: int, key: bytes | None,
                           value: bytes | None, headers: Sequence[Header]) -> bytes:
    """``encode_record`` with range checks and varints of any length."""
    if not 0 <= offset_delta < 2**31:
        raise ValueError(f"offset delta {offset_delta} out of int32 range")
    if not -(2**63) <= timestamp_delta < 2**63:
        raise ValueError(f"timestamp delta {timestamp_delta} out of int64 range")
    body = b"".join((_ATTRIBUTES, _zz(timestamp_delta), _zz(offset_delta), *_sized(key),
                     *_sized(value), _encode_headers(headers) if headers else b"\x00"))
    return _zz(len(body)) + body


def _encode_headers(headers: Sequence[Header]) -> bytes:
    parts = [_zz(len(headers))]
    for header_key, header_value in headers:
        parts += _sized(header_key.encode())
        parts += _sized(header_value)
    return b"".join(parts)


def _read_uvarint32(data: bytes, pos: int) -> tuple[int, int]:
    raw, pos = decode_unsigned_varint(data, pos, 5)
    if raw > 0xFFFFFFFF:
        raise VarintError("varint overflows int32")
    return raw, pos


def _read_uvarint64(data: bytes, pos: int) -> tuple[int, int]:
    raw, pos = decode_unsigned_varint(data, pos, 10)
    if raw > _MASK64:
        raise VarintError("varlong overflows int64")
    return raw, pos


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    raw, pos = _read_uvarint32(data, pos)
    return (raw >> 1) ^ -(raw & 1), pos


# (row type, topic, partition, timestamp type): see ``decode_records``.
RowSpec = tuple[type, str, int, int]


@overload
def decode_records(data: bytes, count: int, base_offset: int, base_timestamp: int,
                   log_append_time: int | None = None) -> list[Record]: ...


@overload
def decode_records(data: bytes, count: int, base_offset: int, base_timestamp: int,
                   log_append_time: int | None = None, *, rows: RowSpec) -> list[Any]: ...


def decode_records(
    data: bytes,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None = None,
    *,
    rows: RowSpec | None = None,
) -> list[Any]:
    """Decode exactly ``count`` records filling ``data`` (the decompressed records section).

    ``log_append_time``, when set, replaces every record's timestamp, as Kafka does for
    LogAppendTime batches. The records are Records, or with ``rows`` = (row type, topic,
    partition, timestamp type) tuples of that type (a named tuple's) of (topic, partition,
    offset, timestamp, timestamp type, key, value, headers), built in the same pass without
    a call per record: the consumer's records. Raises CorruptRecordError on any malformation.
    """
    records: list[Any] = []
    append = records.append
    end = len(data)
    pos = 0
    zigzag = _ZIGZAG
    new = tuple.__new__
    row_type, topic, partition, timestamp_type = rows if rows is not None else (None, "", 0, 0)
    try:
        for _ in range(count):
            # One- and two-byte varints are inlined and their zig-zag looked up: they are
            # nearly every field of nearly every record, and a call per field would dominate
            # decoding.
            b = data[pos]
            if b < 0x80:
                length = zigzag[b]
                pos += 1
            elif (c := data[pos + 1]) < 0x80:
                length = zigzag[(b & 0x7F) | (c << 7)]
                pos += 2
            else:
                b, pos = _read_uvarint32(data, pos)
                length = (b >> 1) ^ -(b & 1)
            record_end = pos + length
            if length < 1 or record_end > end:
                raise CorruptRecordError(f"record length {length} invalid at position {pos}")
            b = data[pos + 1]  # after the attributes byte, which is unused
            if b < 0x80:
                ts_delta = zigzag[b]
                pos += 2
            else:
                b, pos = _read_uvarint64(data, pos + 1)
                ts_delta = (b >> 1) ^ -(b & 1)
            b = data[pos]
            if b < 0x80:
                offset_delta = zigzag[b]
                pos += 1
            elif (c := data[pos + 1]) < 0x80:
                offset_delta = zigzag[(b & 0x7F) | (c << 7)]
                pos += 2
            else:
                b, pos = _read_uvarint32(data, pos)
                offset_delta = (b >> 1) ^ -(b & 1)
            if offset_delta < 0:
                raise CorruptRecordError(f"negative offset delta {offset_delta}")
            # Key and value: a field running past its record leaves ``pos`` beyond
            # ``record_end``, which the check after the headers reports.
            b = data[pos]
            if b == 1:  # zig-zag -1: null
                key: bytes | None = None
                pos += 1
            else:
                if b < 0x80:
                    size = zigzag[b]
                    pos += 1
                elif (c := data[pos + 1]) < 0x80:
                    size = zigzag[(b & 0x7F) | (c << 7)]
                    pos += 2
                else:
                    b, pos = _read_uvarint32(data, pos)
                    size = (b >> 1) ^ -(b & 1)
                if size < 0:
                    raise CorruptRecordError(f"invalid key length {size}")
                key = data[pos : pos + size]
                pos += size
            # The value: the key's steps written out again, on purpose: one helper for both
            # costs two calls per record, ~95 ns (a sixth of this loop) when measured.
            b = data[pos]
            if b == 1:
                value: bytes | None = None
                pos += 1
            else:
                if b < 0x80:
                    size = zigzag[b]
                    pos += 1
                elif (c := data[pos + 1]) < 0x80:
                    size = zigzag[(b & 0x7F) | (c << 7)]
                    pos += 2
                else:
                    b, pos = _read_uvarint32(data, pos)
                    size = (b >> 1) ^ -(b & 1)
                if size < 0:
                    raise CorruptRecordError(f"invalid value length {size}")
                value = data[pos : pos + size]
                pos += size
            if data[pos] == 0 and pos < record_end:
                headers: tuple[Header, ...] = ()
                pos += 1
            else:
                if pos >= record_end:
                    raise CorruptRecordError(
                        f"record fields overrun its declared length {length}")
                headers, pos = _decode_headers(data, pos, record_end)
            if pos != record_end:
                raise CorruptRecordError(
                    f"record declares {length} bytes but its fields use {length + pos - record_end}"
                )
            timestamp = base_timestamp + ts_delta if log_append_time is None else log_append_time
            if row_type is None:
                append(Record(base_offset + offset_delta, timestamp, key, value, headers))
            else:
                append(new(row_type, (topic, partition, base_offset + offset_delta, timestamp,
                                      timestamp_type, key, value, headers)))
    except IndexError:
        raise CorruptRecordError("record runs past the end of the batch") from None
    except VarintError as exc:
        raise CorruptRecordError(f"bad varint in record: {exc}") from None
    if pos != end:
        raise CorruptRecordError(f"{end - pos} bytes left over after {count} records")
    return records


def _decode_headers(data: bytes, pos: int, record_end: int) -> tuple[tuple[Header, ...], int]:
    count, pos = _read_varint(data, pos)
    if count < 0:
        raise CorruptRecordError(f"invalid header count {count}")
    headers: list[Header] = []
    for _ in range(count):
        size, pos = _read_varint(data, pos)
        if size < 0 or pos + size > record_end:
            raise CorruptRecordError(f"invalid header key length {size}")
        try:
            name = data[pos : pos + size].decode()
        except UnicodeDecodeError:
            raise CorruptRecordError("header key is not valid UTF-8") from None
        pos += size
        size, pos = _read_varint(data, pos)
        if size >= 0:
            if pos + size > record_end:
                raise CorruptRecordError("header value overruns its record")
            value: bytes | None = data[pos : pos + size]
            pos += size
        elif size == -1:
            value = None
        else:
            raise CorruptRecordError(f"invalid header value length {size}")
        headers.append((name, value))
    return tuple(headers), pos
