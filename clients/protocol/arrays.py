"""Compiled codecs (a reader, a writer and a minimum size) and those of arrays and nullable
structs, whose elements' codecs the compiler supplies."""

from __future__ import annotations

import struct
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Iterator

from clients.protocol.exceptions import ProtocolError
from clients.protocol.primitives import (
    Reader,
    Writer,
    checked_length,
    read_length,
    write_length,
    write_null,
)


class TooManyElements(ProtocolError):
    """A message names more array elements than its decoder was allowed."""


# The elements the message being decoded may still name: None, no bound (see `bounded`).
_ELEMENTS_LEFT: ContextVar[list[int] | None] = ContextVar("raftka_elements_left", default=None)


@contextmanager
def element_bound(limit: int, what: str) -> Iterator[None]:
    """Within the block, decoding refuses (TooManyElements, naming `what`) any array that
    would take the message past `limit` elements in all, before the array is built: a frame
    can claim millions of small elements, each ten or more times its bytes once decoded."""
    token = _ELEMENTS_LEFT.set([limit, what])  # type: ignore[list-item]
    try:
        yield
    finally:
        _ELEMENTS_LEFT.reset(token)


def _spend(n: int) -> None:
    left = _ELEMENTS_LEFT.get()
    if left is not None and n > 0:
        left[0] -= n
        if left[0] < 0:
            raise TooManyElements(f"more than {left[1]} array elements")


@dataclass(frozen=True, slots=True)
class Compiled:
    """A reader and writer for one struct (or message body) at one version."""

    read: Reader
    write: Writer
    min_size: int


def nullable_struct(inner: Compiled) -> Compiled:
    """Kafka's nullable struct: an int8 marker (-1 null, 1 present) before the struct."""

    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        if pos >= len(buf):
            raise ProtocolError("nullable struct runs past the end of the frame")
        if buf[pos] == 0xFF:
            return None, pos + 1
        return inner.read(buf, pos + 1)

    def write(value: Any, out: bytearray, inserts: list) -> None:
        if value is None:
            out.append(0xFF)
            return
        out.append(1)
        inner.write(value, out, inserts)

    return Compiled(read, write, 1)


def array_codec(elem: Compiled, compact: bool, nullable: bool) -> Compiled:
    """An array of ``elem`` (plain: int32 count; compact: uvarint count + 1; -1/0 is null)."""
    elem_read, elem_write = elem.read, elem.write
    # Zero-size elements would let a tiny frame claim billions of them.
    min_elem = max(elem.min_size, 1)

    def read(buf: memoryview, pos: int) -> tuple[list | None, int]:
        n, pos = read_length(buf, pos, compact, True)
        if checked_length(n * min_elem if n > 0 else n, nullable, len(buf) - pos, "array"):
            return None, pos
        _spend(n)
        items: list[Any] = []
        append = items.append
        for _ in range(n):
            item, pos = elem_read(buf, pos)
            append(item)
        return items, pos

    def write(value: list | None, out: bytearray, inserts: list) -> None:
        if value is None:
            write_null(out, compact, True, nullable, "array")
            return
        write_length(len(value), out, compact, True)
        for item in value:
            elem_write(item, out, inserts)

    return Compiled(read, write, 1 if compact else 4)


def fixed_array_codec(fmt: str, compact: bool, nullable: bool) -> Compiled:
    """An array of one fixed-width type, read and written with a single ``struct`` call."""
    size = struct.calcsize(">" + fmt)

    def read(buf: memoryview, pos: int) -> tuple[list | None, int]:
        n, pos = read_length(buf, pos, compact, True)
        if checked_length(n * size if n > 0 else n, nullable, len(buf) - pos, "array"):
            return None, pos
        _spend(n)
        return list(struct.unpack_from(f">{n}{fmt}", buf, pos)), pos + n * size

    def write(value: list | None, out: bytearray, inserts: list) -> None:
        if value is None:
            write_null(out, compact, True, nullable, "array")
            return
        write_length(len(value), out, compact, True)
        out += struct.pack(f">{len(value)}{fmt}", *value)

    return Compiled(read, write, 1 if compact else 4)
