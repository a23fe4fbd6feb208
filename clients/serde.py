"""Key and value serializers and deserializers, as Kafka's clients name them.

A spec is ``"bytes"`` (the default), ``"str"`` (UTF-8), ``"int"`` (Kafka's
IntegerSerializer: 4 bytes, big-endian, signed), ``"long"`` (LongSerializer: 8 bytes),
``"json"``, a callable taking the value, or an object with Kafka's
``serialize(topic, value)`` / ``deserialize(topic, data)``. None stays None both ways
(a tombstone stays a tombstone), as Kafka's own serializers do.
"""

from __future__ import annotations

import json
import struct
from typing import Any, Callable

Serializer = Callable[[str, Any], "bytes | None"]
Deserializer = Callable[[str, "bytes | None"], Any]


def _to_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"a bytes key or value is needed (or a serializer), got "
                    f"{type(value).__name__}")


def _str_bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


_SERIALIZERS: dict[str, Callable[[Any], bytes]] = {
    "bytes": _to_bytes,
    "str": _str_bytes,
    "int": lambda v: struct.pack(">i", v),
    "long": lambda v: struct.pack(">q", v),
    "json": lambda v: json.dumps(v, separators=(",", ":")).encode(),
}

_DESERIALIZERS: dict[str, Callable[[bytes], Any]] = {
    "bytes": lambda b: b,
    "str": lambda b: b.decode(),
    "int": lambda b: struct.unpack(">i", b)[0],
    "long": lambda b: struct.unpack(">q", b)[0],
    "json": json.loads,
}


def _none_passes(fn: Callable[[Any], Any]) -> Callable[[str, Any], Any]:
    def call(topic: str, value: Any) -> Any:
        return None if value is None else fn(value)
    return call


def serializer(spec: Any) -> Serializer:
    """The serializer for ``spec`` (see the module docstring); ValueError if unknown."""
    return _resolve(spec, _SERIALIZERS, "serialize", "serializer")


def deserializer(spec: Any) -> Deserializer:
    """The deserializer for ``spec`` (see the module docstring); ValueError if unknown."""
    return _resolve(spec, _DESERIALIZERS, "deserialize", "deserializer")


def _resolve(spec: Any, named: dict[str, Callable[[Any], Any]], method: str,
             what: str) -> Callable[[str, Any], Any]:
    if spec is None:
        spec = "bytes"
    if isinstance(spec, str):
        fn = named.get(spec.lower())
        if fn is None:
            raise ValueError(f"unknown {what} {spec!r} (known: {', '.join(named)}, a "
                             f"callable, or an object with {method}(topic, data))")
        return _none_passes(fn)
    bound = getattr(spec, method, None)
    if callable(bound):
        return lambda topic, value: bound(topic, value)
    if callable(spec):
        return _none_passes(spec)
    raise ValueError(f"a {what} must be a name, a callable or an object with "
                     f"{method}(topic, data); got {type(spec).__name__}")


def is_identity(spec: Any) -> bool:
    """Whether ``spec`` leaves bytes as they are (so the hot path can skip it)."""
    return spec is None or (isinstance(spec, str) and spec.lower() == "bytes")


__all__ = ["Deserializer", "Serializer", "deserializer", "is_identity", "serializer"]
