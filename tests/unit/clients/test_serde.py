"""Serializers and deserializers by name, callable or Kafka-style object."""

from __future__ import annotations

import struct

import pytest

from clients.serde import deserializer, is_identity, serializer


def test_named_serializers_round_trip() -> None:
    for name, value in [("str", "é"), ("int", -7), ("long", 2**40), ("json", {"a": [1]}),
                        ("bytes", b"\x00")]:
        data = serializer(name)("t", value)
        assert isinstance(data, bytes)
        assert deserializer(name)("t", data) == value
    assert serializer("int")("t", 1) == struct.pack(">i", 1)   # Kafka's IntegerSerializer


def test_none_stays_none_and_objects_and_callables_work() -> None:
    assert serializer("json")("t", None) is None
    assert deserializer("str")("t", None) is None
    assert serializer(lambda v: v.upper().encode())("t", "x") == b"X"

    class Upper:
        def serialize(self, topic: str, value: str) -> bytes:
            return f"{topic}:{value}".encode()

    assert serializer(Upper())("t", "v") == b"t:v"
    assert is_identity(None) and is_identity("bytes") and not is_identity("str")


def test_unknown_names_and_bad_types_are_errors() -> None:
    with pytest.raises(ValueError, match="unknown serializer 'yaml'"):
        serializer("yaml")
    with pytest.raises(ValueError, match="must be a name"):
        deserializer(3)
    with pytest.raises(TypeError, match="bytes key or value"):
        serializer("bytes")("t", "text")
