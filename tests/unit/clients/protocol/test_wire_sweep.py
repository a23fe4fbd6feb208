"""The wire sweep: every (API, version) Raftka advertises, request and response, round-trips
with a non-default value in every field that version has (tagged fields included), as a dict
and as the generated class, and kafka-python (built from Kafka's JSON, not from ours) reads
the same values from our bytes. The cases come from the advertised table, so a newly
advertised API or version is swept without a change here."""

from __future__ import annotations

import itertools
import uuid
from typing import Any, Iterator

import pytest

from clients.protocol import (
    SUPPORTED_VERSIONS,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from clients.protocol.messages import request_class, response_class
from clients.protocol.schema import Array, Field, FieldType, Struct, in_versions
from clients.protocol.schemas import APIS
from clients.records.batch import Record, encode_batch
from tests.unit.clients.protocol.kafka_python_classes import message_classes
from tests.unit.clients.protocol.schema_values import expected_body, normalise

RECORDS = encode_batch([Record(None, 1_700_000_000_000, b"k", b"v")])
_SIGNED = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}


def cases() -> Iterator[Any]:
    for key, (low, high) in sorted(SUPPORTED_VERSIONS.items()):
        for version in range(low, high + 1):
            for direction in ("request", "response"):
                yield pytest.param(key, version, direction,
                                   id=f"{APIS[key].name}-v{version}-{direction}")


class Values:
    """Distinct non-default values, one per field, the same on every run."""

    def __init__(self) -> None:
        self._counter = itertools.count(1)

    def body(self, fields: tuple[Field, ...], version: int, nulls: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for field in fields:
            if not in_versions(field.versions, version):
                continue
            if nulls and in_versions(field.nullable, version):
                out[field.name] = None
            else:
                out[field.name] = self.value(field, version, nulls)
        return out

    def value(self, field: Field, version: int, nulls: bool) -> Any:
        ftype: FieldType = field.type
        if isinstance(ftype, Array):
            return [self._element(ftype.of, version, nulls) for _ in range(2)]
        value = self._element(ftype, version, nulls)
        if value == field.default:
            value = self._element(ftype, version, nulls)
        return value

    def _element(self, ftype: str | Struct, version: int, nulls: bool) -> Any:
        if isinstance(ftype, Struct):
            return self.body(ftype.fields, version, nulls)
        n = next(self._counter)
        small = n % 100 + 2  # never 0 or -1, the usual defaults
        if ftype in _SIGNED:
            # Negative values, and values that need the type's full width.
            return -small if n % 2 else (1 << _SIGNED[ftype]) - small
        return {
            "uint16": lambda: 65536 - small,
            "uint32": lambda: (1 << 32) - small,
            "bool": lambda: True,
            "float64": lambda: n + 0.25,
            "string": lambda: f"é{n}",
            "bytes": lambda: bytes([n % 256]) * 3,
            "records": lambda: RECORDS,
            "uuid": lambda: uuid.UUID(int=n),
        }[ftype]()


def encode(key: int, version: int, direction: str, body: Any) -> bytes:
    if direction == "request":
        return encode_request(key, version, 42, "sweep", body)
    return encode_response(key, version, 42, body)


def decode(key: int, version: int, direction: str, frame: bytes, typed: bool) -> Any:
    if direction == "request":
        request = decode_request(frame, typed=typed)
        assert (request.api_key, request.api_version, request.correlation_id) == (key, version, 42)
        return request.body
    correlation_id, body = decode_response(key, version, frame, typed=typed)
    assert correlation_id == 42
    return body


def instance(cls: type, owner: type, fields: tuple[Field, ...], body: dict[str, Any]) -> Any:
    """The generated class's instance holding the dict ``body``."""
    kwargs = {}
    for field in fields:
        if field.name not in body:
            continue
        value = body[field.name]
        elem = field.type.of if isinstance(field.type, Array) else field.type
        if value is not None and isinstance(elem, Struct):
            nested = getattr(owner, elem.name)
            if isinstance(field.type, Array):
                value = [instance(nested, owner, elem.fields, v) for v in value]
            else:
                value = instance(nested, owner, elem.fields, value)
        kwargs[field.name] = value
    return cls(**kwargs)


@pytest.mark.parametrize("nulls", [False, True], ids=["values", "nulls"])
@pytest.mark.parametrize(("key", "version", "direction"), list(cases()))
def test_every_field_round_trips_as_dict_and_as_class(
    key: int, version: int, direction: str, nulls: bool
) -> None:
    api = APIS[key]
    fields = api.request if direction == "request" else api.response
    body = Values().body(fields, version, nulls)
    frame = encode(key, version, direction, body)
    expected = expected_body(fields, version, body)
    assert normalise(decode(key, version, direction, frame, typed=False)) == expected

    cls = request_class(key) if direction == "request" else response_class(key)
    typed_body = instance(cls, cls, fields, body)
    assert encode(key, version, direction, typed_body) == frame
    decoded = decode(key, version, direction, frame, typed=True)
    assert decoded == instance(cls, cls, fields, expected)


KAFKA_PYTHON = message_classes()


def kafka_python_value(ftype: FieldType, ours: Any, theirs: Any) -> Any:
    """kafka-python's decoded value in our form (its structs become dicts of our fields)."""
    if theirs is None:
        return None
    if isinstance(ftype, Array):
        return [kafka_python_value(ftype.of, o, t) for o, t in zip(ours, theirs)]
    if isinstance(ftype, Struct):
        return {f.name: kafka_python_value(f.type, ours[f.name], _their_field(theirs, f.name))
                for f in ftype.fields if f.name in ours}
    if ftype == "records":
        return bytes(theirs.buffer() if hasattr(theirs, "buffer") else theirs)
    if isinstance(theirs, (bytes, bytearray, memoryview)):
        return bytes(theirs)
    if isinstance(theirs, set):
        # kafka-python presents the authorized_operations int32 bit fields as sets of bits.
        bits = sum(1 << bit for bit in theirs)
        return bits - (1 << 32) if bits >= 1 << 31 else bits
    return theirs


def _their_field(theirs: Any, name: str) -> Any:
    try:
        return getattr(theirs, name)
    except AttributeError:
        if name.endswith("_authorized_operations"):  # kafka-python names them all alike
            return getattr(theirs, "authorized_operations")
        raise


@pytest.mark.parametrize(("key", "version", "direction"), list(cases()))
def test_kafka_python_reads_our_frames(key: int, version: int, direction: str) -> None:
    known = KAFKA_PYTHON[0 if direction == "request" else 1].get(key)
    if known is None or version > known.max_version:
        pytest.skip("kafka-python lacks this API version")
    api = APIS[key]
    fields = api.request if direction == "request" else api.response
    body = Values().body(fields, version, nulls=False)
    frame = encode(key, version, direction, body)
    header = 10 + len("sweep") if direction == "request" else 4
    flexible = in_versions(api.flexible, version) and not (direction == "response" and key == 18)
    # kafka-python's own struct decoder: ApiVersionsResponse.decode always reads version 0.
    compact = known.flexible_version_q(version)
    read = known._struct.compiled_decode_from(version, compact=compact, tagged=compact,
                                              data_class=known)
    theirs, _ = read(memoryview(frame), header + (1 if flexible else 0))
    struct = Struct("body", tuple(f for f in fields if f.name in body))
    assert kafka_python_value(struct, body, theirs) == normalise(body)
