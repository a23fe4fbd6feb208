"""Variable-length integers as Kafka encodes them (protobuf style, zig-zag for signed).

Shared by the protocol codec (unsigned varints in compact types, signed varints in tagged
fields) and the record codec (every record field). Decoders raise VarintError, a ValueError,
which each codec turns into its own error type.
"""

from __future__ import annotations


class VarintError(ValueError):
    """A varint runs past the buffer or is longer than its type allows."""


def encode_unsigned_varint(value: int) -> bytes:
    if value < 0:
        raise VarintError(f"unsigned varint cannot hold {value}")
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def decode_unsigned_varint(
    buf: bytes | bytearray | memoryview, pos: int, max_bytes: int = 5
) -> tuple[int, int]:
    """Return (value, next position). ``max_bytes`` is 5 for 32-bit and 10 for 64-bit values."""
    result = 0
    shift = 0
    end = len(buf)
    for i in range(max_bytes):
        if pos >= end:
            raise VarintError("varint runs past the end of the buffer")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
    raise VarintError(f"varint longer than {max_bytes} bytes")


def zigzag_encode(value: int) -> int:
    return (value << 1) ^ (value >> 63)


def zigzag_decode(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def encode_varint(value: int) -> bytes:
    """Signed 32-bit zig-zag varint."""
    if not -(2**31) <= value < 2**31:
        raise VarintError(f"varint out of int32 range: {value}")
    return encode_unsigned_varint(zigzag_encode(value) & 0xFFFFFFFF)


def encode_varlong(value: int) -> bytes:
    """Signed 64-bit zig-zag varint."""
    if not -(2**63) <= value < 2**63:
        raise VarintError(f"varlong out of int64 range: {value}")
    return encode_unsigned_varint(zigzag_encode(value) & 0xFFFFFFFFFFFFFFFF)


def decode_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    raw, pos = decode_unsigned_varint(buf, pos, 5)
    if raw > 0xFFFFFFFF:
        raise VarintError("varint overflows int32")
    return zigzag_decode(raw), pos


def decode_varlong(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    raw, pos = decode_unsigned_varint(buf, pos, 10)
    if raw > 0xFFFFFFFFFFFFFFFF:
        raise VarintError("varlong overflows int64")
    return zigzag_decode(raw), pos


def size_of_unsigned_varint(value: int) -> int:
    size = 1
    while value > 0x7F:
        value >>= 7
        size += 1
    return size


def size_of_varint(value: int) -> int:
    return size_of_unsigned_varint(zigzag_encode(value) & 0xFFFFFFFF)


def size_of_varlong(value: int) -> int:
    return size_of_unsigned_varint(zigzag_encode(value) & 0xFFFFFFFFFFFFFFFF)
