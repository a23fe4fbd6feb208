"""Compiles a message schema at one version into a reader and a writer.

Compilation resolves everything that depends on the version once (presence, nullability,
compact encodings, tags, defaults) and groups runs of fixed-width fields into a single
``struct`` call, so per-message work is a short loop over prepared steps.

Decoded structs are dicts holding every declared field: fields absent from the version or
from the frame (tagged) carry Kafka's default. Encoding reads fields with ``dict.get`` so a
missing key takes its default; a non-default value for a field the version lacks is an
error unless the field is ignorable (Kafka's rule). Keys that are not fields are ignored.
"""

from __future__ import annotations

import copy
import struct
from dataclasses import dataclass
from typing import Any, Callable

from clients.protocol.exceptions import ProtocolError
from clients.protocol.primitives import (
    FIXED_FORMATS,
    Reader,
    Writer,
    checked_length,
    primitive_default,
    primitive_min_size,
    primitive_reader,
    primitive_writer,
    read_length,
    read_uvarint,
    value_size,
    write_length,
    write_null,
    write_uvarint,
)
from clients.protocol.schema import NO_DEFAULT, Array, Field, FieldType, Struct, in_versions

_MISSING = object()


@dataclass(frozen=True, slots=True)
class Compiled:
    """A reader and writer for one struct (or message body) at one version."""

    read: Reader
    write: Writer
    min_size: int


def field_default(field: Field) -> Any:
    """Kafka's default value of ``field`` (shared instance; copy before mutating)."""
    if field.default is not NO_DEFAULT:
        return field.default
    return type_default(field.type)


def type_default(ftype: FieldType) -> Any:
    if isinstance(ftype, Array):
        return []
    if isinstance(ftype, Struct):
        return {f.name: field_default(f) for f in ftype.fields}
    return primitive_default(ftype)


def _default_factory(field: Field) -> Callable[[], Any] | None:
    """A maker of fresh default values, or None when the default is immutable."""
    value = field_default(field)
    if isinstance(value, (list, dict)):
        return lambda: copy.deepcopy(value)
    return None


def default_checker(field: Field) -> Callable[[Any], bool]:
    """Whether a value equals the field's default (None always counts as default)."""
    default = field_default(field)
    if isinstance(field.type, Struct):
        items = tuple(default.items())
        return lambda v: v is None or all(v.get(k, d) == d for k, d in items)
    if isinstance(field.type, Array):
        if default is None:
            return lambda v: v is None
        return lambda v: v is None or len(v) == 0
    if default is None:
        return lambda v: v is None
    return lambda v: v is None or v == default


def compile_struct(fields: tuple[Field, ...], version: int, flexible: bool) -> Compiled:
    """Reader and writer for ``fields`` at ``version`` (``flexible``: compact + tagged)."""
    base: dict[str, Any] = {}
    factories: list[tuple[str, Callable[[], Any]]] = []
    absent_checks: list[tuple[str, Callable[[Any], bool]]] = []
    regular: list[tuple[Field, FieldType, bool, bool]] = []
    tagged: list[tuple[int, Field, Compiled]] = []
    for field in fields:
        factory = _default_factory(field)
        if not in_versions(field.versions, version):
            _set_default(base, factories, field, factory)
            if not field.ignorable:
                absent_checks.append((field.name, default_checker(field)))
            continue
        nullable = in_versions(field.nullable, version)
        compact = flexible if field.flexible is None else in_versions(field.flexible, version)
        if field.tag is not None and flexible and in_versions(field.tagged, version):
            _set_default(base, factories, field, factory)
            codec = compile_type(field.type, version, flexible, compact, nullable)
            tagged.append((field.tag, field, codec))
        else:
            regular.append((field, field.type, compact, nullable))
    tagged.sort(key=lambda t: t[0])

    read_steps, write_steps, min_size = _regular_steps(regular, version, flexible)
    if flexible:
        min_size += 1
    read = _struct_reader(base, tuple(factories), tuple(read_steps), flexible, tagged)
    write = _struct_writer(tuple(absent_checks), tuple(write_steps), flexible, tagged)
    return Compiled(read, write, min_size)


def _set_default(
    base: dict[str, Any],
    factories: list[tuple[str, Callable[[], Any]]],
    field: Field,
    factory: Callable[[], Any] | None,
) -> None:
    if factory is None:
        base[field.name] = field_default(field)
    else:
        factories.append((field.name, factory))


def _regular_steps(
    regular: list[tuple[Field, FieldType, bool, bool]], version: int, flexible: bool
) -> tuple[list[Callable], list[Callable], int]:
    """Steps in declaration order; runs of fixed-width fields become one struct call."""
    read_steps: list[Callable] = []
    write_steps: list[Callable] = []
    min_size = 0
    run: list[Field] = []

    def flush() -> None:
        nonlocal min_size
        if run:
            r, w, size = _fixed_run(
                [f.name for f in run], [f.type for f in run], [field_default(f) for f in run]
            )
            read_steps.append(r)
            write_steps.append(w)
            min_size += size
            run.clear()

    for field, ftype, compact, nullable in regular:
        if isinstance(ftype, str) and ftype in FIXED_FORMATS:
            run.append(field)
            continue
        flush()
        codec = compile_type(ftype, version, flexible, compact, nullable)
        read_steps.append(_field_read_step(field.name, codec.read))
        write_steps.append(_field_write_step(field.name, field_default(field), codec.write))
        min_size += codec.min_size
    flush()
    return read_steps, write_steps, min_size


def _fixed_run(
    names: list[str], kinds: list[str], defaults: list[Any]
) -> tuple[Callable, Callable, int]:
    packer = struct.Struct(">" + "".join(FIXED_FORMATS[k] for k in kinds))
    unpack, pack, size = packer.unpack_from, packer.pack, packer.size
    names_t, defaults_t = tuple(names), tuple(defaults)

    def read(buf: memoryview, pos: int, out: dict) -> int:
        out.update(zip(names_t, unpack(buf, pos)))
        return pos + size

    def write(value: dict, out: bytearray, inserts: list) -> None:
        out += pack(*map(value.get, names_t, defaults_t))

    return read, write, size


def _field_read_step(name: str, read: Reader) -> Callable:
    def step(buf: memoryview, pos: int, out: dict) -> int:
        out[name], pos = read(buf, pos)
        return pos

    return step


def _field_write_step(name: str, default: Any, write: Writer) -> Callable:
    def step(value: dict, out: bytearray, inserts: list) -> None:
        write(value.get(name, default), out, inserts)

    return step


def _struct_reader(
    base: dict[str, Any],
    factories: tuple[tuple[str, Callable[[], Any]], ...],
    steps: tuple[Callable, ...],
    flexible: bool,
    tagged: list[tuple[int, Field, Compiled]],
) -> Reader:
    by_tag = {tag: (field.name, codec.read) for tag, field, codec in tagged}

    def read(buf: memoryview, pos: int) -> tuple[dict, int]:
        out = base.copy()
        for name, make in factories:
            out[name] = make()
        for step in steps:
            pos = step(buf, pos, out)
        if flexible:
            pos = _read_tagged(buf, pos, out, by_tag)
        return out, pos

    return read


def _read_tagged(buf: memoryview, pos: int, out: dict, by_tag: dict) -> int:
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        end = pos + size
        if end > len(buf):
            raise ProtocolError(f"tagged field {tag} runs past the end of the frame")
        known = by_tag.get(tag)
        if known is not None:
            # Bound the field to its declared size so it cannot read into what follows.
            out[known[0]], _ = known[1](buf[:end], pos)
        pos = end
    return pos


def _struct_writer(
    absent_checks: tuple[tuple[str, Callable[[Any], bool]], ...],
    steps: tuple[Callable, ...],
    flexible: bool,
    tagged: list[tuple[int, Field, Compiled]],
) -> Writer:
    tagged_t = tuple((tag, f.name, c.write, default_checker(f)) for tag, f, c in tagged)

    def write(value: dict, out: bytearray, inserts: list) -> None:
        for name, is_default in absent_checks:
            if name in value and not is_default(value[name]):
                raise ProtocolError(f"field {name!r} is absent in this version but not default")
        for step in steps:
            step(value, out, inserts)
        if flexible:
            if tagged_t:
                _write_tagged(value, out, inserts, tagged_t)
            else:
                out.append(0)

    return write


def _write_tagged(value: dict, out: bytearray, inserts: list, tagged: tuple) -> None:
    items = []
    for tag, name, write, is_default in tagged:
        v = value.get(name, _MISSING)
        if v is _MISSING or is_default(v):
            continue
        sub = bytearray()
        sub_inserts: list = []
        write(v, sub, sub_inserts)
        items.append((tag, sub, sub_inserts))
    write_uvarint(len(items), out)
    for tag, sub, sub_inserts in items:
        write_uvarint(tag, out)
        write_uvarint(len(sub) + sum(value_size(c) for _, c in sub_inserts), out)
        start = len(out)
        inserts.extend((start + off, chunk) for off, chunk in sub_inserts)
        out += sub


def compile_type(
    ftype: FieldType, version: int, flexible: bool, compact: bool, nullable: bool
) -> Compiled:
    """Reader and writer for a field's type at ``version``."""
    if isinstance(ftype, str):
        return Compiled(
            primitive_reader(ftype, compact, nullable),
            primitive_writer(ftype, compact, nullable),
            primitive_min_size(ftype, compact),
        )
    if isinstance(ftype, Struct):
        inner = compile_struct(ftype.fields, version, flexible)
        return _nullable_struct(inner) if nullable else inner
    if isinstance(ftype, Array):
        if isinstance(ftype.of, str) and ftype.of in FIXED_FORMATS:
            return _fixed_array(FIXED_FORMATS[ftype.of], compact, nullable)
        elem = compile_type(ftype.of, version, flexible, compact, False)
        return _array(elem, compact, nullable)
    raise ValueError(f"unknown field type {ftype!r}")


def _nullable_struct(inner: Compiled) -> Compiled:
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


def _array(elem: Compiled, compact: bool, nullable: bool) -> Compiled:
    elem_read, elem_write = elem.read, elem.write
    # Zero-size elements would let a tiny frame claim billions of them.
    min_elem = max(elem.min_size, 1)

    def read(buf: memoryview, pos: int) -> tuple[list | None, int]:
        n, pos = read_length(buf, pos, compact, True)
        if checked_length(n * min_elem if n > 0 else n, nullable, len(buf) - pos, "array"):
            return None, pos
        items = []
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


def _fixed_array(fmt: str, compact: bool, nullable: bool) -> Compiled:
    size = struct.calcsize(">" + fmt)

    def read(buf: memoryview, pos: int) -> tuple[list | None, int]:
        n, pos = read_length(buf, pos, compact, True)
        if checked_length(n * size if n > 0 else n, nullable, len(buf) - pos, "array"):
            return None, pos
        return list(struct.unpack_from(f">{n}{fmt}", buf, pos)), pos + n * size

    def write(value: list | None, out: bytearray, inserts: list) -> None:
        if value is None:
            write_null(out, compact, True, nullable, "array")
            return
        write_length(len(value), out, compact, True)
        out += struct.pack(f">{len(value)}{fmt}", *value)

    return Compiled(read, write, 1 if compact else 4)
