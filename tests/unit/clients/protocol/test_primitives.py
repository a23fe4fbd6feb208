"""Exact wire bytes of every primitive type, in plain and compact form, nullable or not."""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pytest

from clients.protocol import ApiKey, ProtocolError, decode_response, encode_response
from clients.protocol.compiler import Compiled, compile_struct, compile_type
from clients.protocol.primitives import ZERO_UUID, primitive_reader, primitive_writer
from clients.protocol.schema import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    UINT32,
    UUID,
    Array,
    Field,
)
from clients.varint import (
    VarintError,
    decode_unsigned_varint,
    decode_varint,
    decode_varlong,
    encode_unsigned_varint,
    encode_varint,
    encode_varlong,
    size_of_unsigned_varint,
    size_of_varint,
    size_of_varlong,
)

SOME_UUID = uuid.UUID("00010203-0405-0607-0809-0a0b0c0d0e0f")


def _write(kind: str, value: Any, compact: bool = False, nullable: bool = False) -> bytes:
    out = bytearray()
    primitive_writer(kind, compact, nullable)(value, out, [])
    return bytes(out)


def _read(kind: str, data: bytes, compact: bool = False, nullable: bool = False) -> Any:
    value, pos = primitive_reader(kind, compact, nullable)(memoryview(data), 0)
    assert pos == len(data)
    return bytes(value) if isinstance(value, memoryview) else value


@pytest.mark.parametrize(
    ("kind", "value", "wire"),
    [
        (INT8, -1, b"\xff"),
        (INT8, 127, b"\x7f"),
        (INT16, -2, b"\xff\xfe"),
        (UINT16, 65535, b"\xff\xff"),
        (INT32, -(2**31), b"\x80\x00\x00\x00"),
        (UINT32, 2**32 - 1, b"\xff\xff\xff\xff"),
        (INT64, 2**63 - 1, b"\x7f" + b"\xff" * 7),
        (INT64, -1, b"\xff" * 8),
        (FLOAT64, 1.5, b"\x3f\xf8" + b"\x00" * 6),
        (BOOL, True, b"\x01"),
        (BOOL, False, b"\x00"),
        (UUID, SOME_UUID, bytes(range(16))),
    ],
)
def test_fixed_width_types_are_big_endian(kind: str, value: Any, wire: bytes) -> None:
    assert _write(kind, value) == wire
    assert _read(kind, wire) == value


@pytest.mark.parametrize(
    ("kind", "value", "compact", "nullable", "wire"),
    [
        (STRING, "hi", False, False, b"\x00\x02hi"),
        (STRING, "", False, False, b"\x00\x00"),
        (STRING, None, False, True, b"\xff\xff"),
        (STRING, "hi", True, False, b"\x03hi"),
        (STRING, "", True, False, b"\x01"),
        (STRING, None, True, True, b"\x00"),
        (STRING, "é", True, False, b"\x03\xc3\xa9"),  # length counts UTF-8 bytes
        (BYTES, b"ab", False, False, b"\x00\x00\x00\x02ab"),
        (BYTES, None, False, True, b"\xff\xff\xff\xff"),
        (BYTES, b"ab", True, False, b"\x03ab"),
        (BYTES, None, True, True, b"\x00"),
        (BYTES, b"x" * 200, True, False, b"\xc9\x01" + b"x" * 200),  # 201 as a uvarint
    ],
)
def test_length_prefixed_types(kind: str, value: Any, compact: bool, nullable: bool, wire: bytes) -> None:
    assert _write(kind, value, compact, nullable) == wire
    assert _read(kind, wire, compact, nullable) == value


@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("kind", [STRING, BYTES])
def test_null_is_refused_where_not_nullable(kind: str, compact: bool) -> None:
    with pytest.raises(ProtocolError):
        _write(kind, None, compact, nullable=False)
    null = b"\x00" if compact else (b"\xff\xff" if kind == STRING else b"\xff\xff\xff\xff")
    with pytest.raises(ProtocolError):
        _read(kind, null, compact, nullable=False)


def _array(of: Any, compact: bool, nullable: bool) -> Compiled:
    return compile_type(Array(of), 0, compact, compact, nullable)


@pytest.mark.parametrize(
    ("of", "value", "compact", "nullable", "wire"),
    [
        (INT32, [1, -1], False, False, b"\x00\x00\x00\x02" + b"\x00\x00\x00\x01" + b"\xff" * 4),
        (INT32, [1, -1], True, False, b"\x03" + b"\x00\x00\x00\x01" + b"\xff" * 4),
        (INT32, None, False, True, b"\xff\xff\xff\xff"),
        (INT32, None, True, True, b"\x00"),
        (INT32, [], True, False, b"\x01"),
        (STRING, ["a", "bc"], False, False, b"\x00\x00\x00\x02" + b"\x00\x01a" + b"\x00\x02bc"),
        (STRING, ["a", "bc"], True, False, b"\x03" + b"\x02a" + b"\x03bc"),
        (STRING, None, True, True, b"\x00"),
    ],
)
def test_arrays(of: str, value: list | None, compact: bool, nullable: bool, wire: bytes) -> None:
    codec = _array(of, compact, nullable)
    out = bytearray()
    codec.write(value, out, [])
    assert bytes(out) == wire
    decoded, pos = codec.read(memoryview(wire), 0)
    assert (decoded, pos) == (value, len(wire))


@pytest.mark.parametrize("compact", [False, True])
def test_null_array_is_refused_where_not_nullable(compact: bool) -> None:
    codec = _array(INT32, compact, nullable=False)
    with pytest.raises(ProtocolError):
        codec.write(None, bytearray(), [])
    with pytest.raises(ProtocolError):
        codec.read(memoryview(b"\x00" if compact else b"\xff\xff\xff\xff"), 0)


_TAGGED = (
    Field("plain", INT16, "0+"),
    Field("small", INT32, "0+", tag=0, tagged="0+"),
    Field("name", STRING, "0+", nullable="0+", tag=3, tagged="0+", default=None),
)


def test_tagged_fields_are_written_in_tag_order_with_sizes() -> None:
    codec = compile_struct(_TAGGED, 0, flexible=True)
    out = bytearray()
    codec.write({"plain": 1, "small": 5, "name": "ab"}, out, [])
    # plain int16, then 2 tagged fields: (tag 0, 4 bytes, int32) and (tag 3, 3 bytes, compact string)
    assert bytes(out) == b"\x00\x01" + b"\x02" + b"\x00\x04\x00\x00\x00\x05" + b"\x03\x03\x03ab"
    assert codec.read(memoryview(bytes(out)), 0) == ({"plain": 1, "small": 5, "name": "ab"}, len(out))


def test_absent_tagged_fields_decode_to_defaults() -> None:
    codec = compile_struct(_TAGGED, 0, flexible=True)
    assert codec.read(memoryview(b"\x00\x07\x00"), 0) == ({"plain": 7, "small": 0, "name": None}, 3)


def test_a_tagged_field_cannot_read_past_its_declared_size() -> None:
    codec = compile_struct(_TAGGED, 0, flexible=True)
    # tag 0 declares 2 bytes but an int32 needs 4: the bytes after it must not be borrowed.
    with pytest.raises((struct.error, ProtocolError)):
        codec.read(memoryview(b"\x00\x01" + b"\x01" + b"\x00\x02\x00\x00" + b"\x00\x00\x00"), 0)


def test_response_header_v1_carries_tagged_fields() -> None:
    frame = encode_response(ApiKey.HEARTBEAT, 4, 77, {"error_code": 27})
    assert frame == struct.pack(">i", 77) + b"\x00" + struct.pack(">ih", 0, 27) + b"\x00"
    # A header tagged field (tag 1, two bytes) is skipped on decode.
    with_tag = struct.pack(">i", 77) + b"\x01\x01\x02zz" + frame[5:]
    assert decode_response(ApiKey.HEARTBEAT, 4, with_tag) == (77, {"throttle_time_ms": 0, "error_code": 27})


def test_response_header_v0_is_only_the_correlation_id() -> None:
    frame = encode_response(ApiKey.HEARTBEAT, 3, 77, {"error_code": 27})
    assert frame == struct.pack(">iih", 77, 0, 27)


@pytest.mark.parametrize(
    ("value", "wire"),
    [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-64, b"\x7f"), (64, b"\x80\x01"),
     (2**31 - 1, b"\xfe\xff\xff\xff\x0f"), (-(2**31), b"\xff\xff\xff\xff\x0f")],
)
def test_varint_is_zigzag(value: int, wire: bytes) -> None:
    assert encode_varint(value) == wire
    assert decode_varint(wire, 0) == (value, len(wire))
    assert size_of_varint(value) == len(wire)


@pytest.mark.parametrize(
    ("value", "wire"),
    [(0, b"\x00"), (-1, b"\x01"), (150, b"\xac\x02"),
     (2**63 - 1, b"\xfe" + b"\xff" * 8 + b"\x01"), (-(2**63), b"\xff" * 9 + b"\x01")],
)
def test_varlong_is_zigzag(value: int, wire: bytes) -> None:
    assert encode_varlong(value) == wire
    assert decode_varlong(wire, 0) == (value, len(wire))
    assert size_of_varlong(value) == len(wire)


@pytest.mark.parametrize(("value", "wire"), [(0, b"\x00"), (127, b"\x7f"), (300, b"\xac\x02"),
                                             (2**32 - 1, b"\xff\xff\xff\xff\x0f")])
def test_unsigned_varint(value: int, wire: bytes) -> None:
    assert encode_unsigned_varint(value) == wire
    assert decode_unsigned_varint(wire, 0) == (value, len(wire))
    assert size_of_unsigned_varint(value) == len(wire)


@pytest.mark.parametrize(
    ("decode", "wire"),
    [(decode_unsigned_varint, b"\x80\x80"), (decode_unsigned_varint, b"\xff" * 5 + b"\x01"),
     (decode_varint, b"\xff" * 5 + b"\x01"), (decode_varint, b"\xff\xff\xff\xff\x7f"),
     (decode_varlong, b"\xff" * 10 + b"\x01"), (decode_varlong, b"\xff" * 9 + b"\x7f"),
     (decode_varint, b"")],
)
def test_bad_varints_raise_varint_error(decode: Any, wire: bytes) -> None:
    with pytest.raises(VarintError):
        decode(wire, 0)


@pytest.mark.parametrize(
    ("encode", "value"),
    [(encode_varint, 2**31), (encode_varint, -(2**31) - 1), (encode_varlong, 2**63),
     (encode_unsigned_varint, -1)],
)
def test_out_of_range_varints_are_refused(encode: Any, value: int) -> None:
    with pytest.raises(VarintError):
        encode(value)


def test_uuids_read_back_including_the_zero_id() -> None:
    read = primitive_reader(UUID, False, False)
    buf = memoryview(bytes(16) + SOME_UUID.bytes)
    zero, pos = read(buf, 0)
    assert (zero, pos) == (uuid.UUID(int=0), 16)
    assert zero is ZERO_UUID  # the shared value, not a new UUID per topic of a request
    assert read(buf, 16) == (SOME_UUID, 32)
