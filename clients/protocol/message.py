"""The base of the generated message classes (clients/protocol/messages), and their value types.

A generated class lists its fields in ``__slots__`` in Kafka's declaration order; equality and
``repr`` go through them, so instances compare by value in tests and print readably.
"""

from __future__ import annotations

from typing import Any, Iterator, Protocol, Union


class SizedChunk(Protocol):
    """An opaque piece of a response sent as it is (e.g. a range of a log file)."""

    @property
    def size(self) -> int: ...


Bytes = Union[bytes, bytearray, memoryview]
"""A ``bytes`` field: decoded as a zero-copy view of the frame; any bytes-like value encodes."""

Records = Union[bytes, bytearray, memoryview, SizedChunk]
"""A ``records`` field: record batches kept opaque (a view, or a file range when sending)."""


class _Default:
    """The marker of a parameter left out, for fields whose default is a fresh list or struct."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Any = _Default()


class Message:
    """A Kafka message, header or struct, as generated from Kafka's definitions."""

    __slots__: tuple[str, ...] = ()

    def fields(self) -> Iterator[tuple[str, Any]]:
        """(name, value) of every field, in declaration order."""
        for name in self.__slots__:
            yield name, getattr(self, name)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable, like a dict

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={value!r}" for name, value in self.fields())
        return f"{self.__class__.__qualname__}({inner})"
