"""Readers and writers for Kafka's primitive and length-prefixed types.

A reader is ``read(buf: memoryview, pos: int) -> (value, next_pos)``; a writer is
``write(value, out: bytearray, inserts: list[tuple[int, object]]) -> None``. Large
``bytes``/``records`` values are not copied into ``out``: they are recorded in ``inserts``
as (offset in ``out``, value) and spliced in once, when the frame is joined, so a 1 MiB
record set is copied at most once (or never, for chunked output).

Readers check every length against the bytes left before slicing. Running off the end of
a fixed-width read raises ``struct.error``, which the codec turns into ProtocolError.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any, Callable

from clients.protocol.exceptions import ProtocolError
from clients.protocol.schema import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    UINT16,
    UINT32,
    UUID,
)
from clients.varint import decode_unsigned_varint, encode_unsigned_varint

Reader = Callable[[memoryview, int], tuple[Any, int]]
Writer = Callable[[Any, bytearray, list], None]

ZERO_UUID = uuid.UUID(int=0)

# Values at least this long are spliced in at join time instead of copied into the buffer.
SPLICE_THRESHOLD = 4096

FIXED_FORMATS: dict[str, str] = {
    BOOL: "?",
    INT8: "b",
    INT16: "h",
    UINT16: "H",
    INT32: "i",
    UINT32: "I",
    INT64: "q",
    FLOAT64: "d",
}

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_UUID = struct.Struct(">16s")


def read_uvarint(buf: memoryview, pos: int) -> tuple[int, int]:
    """An unsigned 32-bit varint; the commonest case, one byte, is inlined."""
    byte = buf[pos]
    if byte < 0x80:
        return byte, pos + 1
    return decode_unsigned_varint(buf, pos, 5)


def write_uvarint(value: int, out: bytearray) -> None:
    if 0 <= value < 0x80:
        out.append(value)
    else:
        out += encode_unsigned_varint(value)


def value_size(value: Any) -> int:
    """Length of a bytes-like value, or ``size`` of an opaque chunk (e.g. a file range)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return value.nbytes if isinstance(value, memoryview) else len(value)
    size = getattr(value, "size", None)
    if not isinstance(size, int) or size < 0:
        raise ProtocolError(f"cannot encode {type(value).__name__} as bytes")
    return size


def fixed_reader(kind: str) -> Reader:
    unpack = struct.Struct(">" + FIXED_FORMATS[kind]).unpack_from
    size = struct.calcsize(">" + FIXED_FORMATS[kind])

    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        return unpack(buf, pos)[0], pos + size

    return read


def fixed_writer(kind: str) -> Writer:
    pack = struct.Struct(">" + FIXED_FORMATS[kind]).pack

    def write(value: Any, out: bytearray, inserts: list) -> None:
        out += pack(value)

    return write


_ZERO_UUID_BYTES = bytes(16)


def read_uuid(buf: memoryview, pos: int) -> tuple[uuid.UUID, int]:
    raw = _UUID.unpack_from(buf, pos)[0]
    # The zero id (a topic named by name) is the common value, and building a UUID costs
    # more than the rest of a Metadata topic entry's decoding.
    if raw == _ZERO_UUID_BYTES:
        return ZERO_UUID, pos + 16
    return uuid.UUID(bytes=raw), pos + 16


def write_uuid(value: uuid.UUID, out: bytearray, inserts: list) -> None:
    out += value.bytes


def read_length(buf: memoryview, pos: int, compact: bool, wide: bool) -> tuple[int, int]:
    """A length prefix: -1 means null. ``wide`` selects int32 (bytes, arrays) over int16."""
    if compact:
        n, pos = read_uvarint(buf, pos)
        return n - 1, pos
    if wide:
        return _INT32.unpack_from(buf, pos)[0], pos + 4
    return _INT16.unpack_from(buf, pos)[0], pos + 2


def write_length(n: int, out: bytearray, compact: bool, wide: bool) -> None:
    if compact:
        write_uvarint(n + 1, out)
    elif wide:
        out += _INT32.pack(n)
    else:
        out += _INT16.pack(n)


def write_null(out: bytearray, compact: bool, wide: bool, nullable: bool, what: str) -> None:
    """The null length prefix (-1); ProtocolError when the field is not nullable."""
    if not nullable:
        raise ProtocolError(f"null value for a non-nullable {what}")
    write_length(-1, out, compact, wide)


def checked_length(n: int, nullable: bool, remaining: int, what: str) -> bool:
    """Validate a decoded length; True when it denotes null."""
    if n < 0:
        if n == -1 and nullable:
            return True
        raise ProtocolError(f"invalid {what} length {n}")
    if n > remaining:
        raise ProtocolError(f"{what} of length {n} runs past the end of the frame")
    return False


def string_reader(compact: bool, nullable: bool) -> Reader:
    def read(buf: memoryview, pos: int) -> tuple[str | None, int]:
        n, pos = read_length(buf, pos, compact, False)
        if checked_length(n, nullable, len(buf) - pos, "string"):
            return None, pos
        end = pos + n
        return str(buf[pos:end], "utf-8"), end

    return read


def string_writer(compact: bool, nullable: bool) -> Writer:
    def write(value: str | None, out: bytearray, inserts: list) -> None:
        if value is None:
            write_null(out, compact, False, nullable, "string")
            return
        data = value.encode("utf-8")
        if not compact and len(data) > 0x7FFF:
            raise ProtocolError(f"string of {len(data)} bytes is too long")
        write_length(len(data), out, compact, False)
        out += data

    return write


def bytes_reader(compact: bool, nullable: bool) -> Reader:
    """Decoded bytes and records are zero-copy memoryview slices of the frame."""

    def read(buf: memoryview, pos: int) -> tuple[memoryview | None, int]:
        n, pos = read_length(buf, pos, compact, True)
        if checked_length(n, nullable, len(buf) - pos, "bytes"):
            return None, pos
        end = pos + n
        return buf[pos:end], end

    return read


def bytes_writer(compact: bool, nullable: bool) -> Writer:
    def write(value: Any, out: bytearray, inserts: list) -> None:
        if value is None:
            write_null(out, compact, True, nullable, "bytes field")
            return
        size = value_size(value)
        write_length(size, out, compact, True)
        if size >= SPLICE_THRESHOLD or not isinstance(value, (bytes, bytearray, memoryview)):
            inserts.append((len(out), value))
        else:
            out += value

    return write


def primitive_reader(kind: str, compact: bool, nullable: bool) -> Reader:
    if kind in FIXED_FORMATS:
        return fixed_reader(kind)
    if kind == UUID:
        return read_uuid
    if kind == STRING:
        return string_reader(compact, nullable)
    if kind in (BYTES, RECORDS):
        return bytes_reader(compact, nullable)
    raise ValueError(f"unknown primitive type {kind!r}")


def primitive_writer(kind: str, compact: bool, nullable: bool) -> Writer:
    if kind in FIXED_FORMATS:
        return fixed_writer(kind)
    if kind == UUID:
        return write_uuid
    if kind == STRING:
        return string_writer(compact, nullable)
    if kind in (BYTES, RECORDS):
        return bytes_writer(compact, nullable)
    raise ValueError(f"unknown primitive type {kind!r}")


def primitive_min_size(kind: str, compact: bool) -> int:
    """Fewest bytes an encoded value of ``kind`` can take (bounds array counts on decode)."""
    if kind in FIXED_FORMATS:
        return struct.calcsize(">" + FIXED_FORMATS[kind])
    if kind == UUID:
        return 16
    if compact:
        return 1
    return 2 if kind == STRING else 4


def primitive_default(kind: str) -> Any:
    """Kafka's default for a field of this type without a declared default."""
    if kind == STRING:
        return ""
    if kind == BYTES:
        return b""
    if kind == RECORDS:
        return None
    if kind == UUID:
        return ZERO_UUID
    if kind == BOOL:
        return False
    if kind == FLOAT64:
        return 0.0
    return 0
