"""Compiles a message schema at one version into a reader and a writer.

Compilation resolves everything that depends on the version once (presence, nullability,
compact encodings, tags, defaults) and groups runs of fixed-width fields into a single
``struct`` call, so per-message work is a short loop over prepared steps.

A reader builds dicts, or instances of the generated message classes when given the class
(``target``) and the message class that holds the nested struct classes (``owner``). Decoded
dicts hold every declared field: fields absent from the version or from the frame (tagged)
carry Kafka's default; an instance's constructor supplies those defaults itself.

A writer takes either form, struct by struct. From a dict it reads fields with ``dict.get`` so
a missing key takes its default; keys that are not fields are ignored. A non-default value for
a field the version lacks is an error unless the field is ignorable (Kafka's rule).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Callable

from clients.protocol.arrays import Compiled, array_codec, fixed_array_codec, nullable_struct
from clients.protocol.defaults import default_checker, default_factory, field_default
from clients.protocol.exceptions import ProtocolError
from clients.protocol.message import Message
from clients.protocol.primitives import (
    FIXED_FORMATS,
    Reader,
    Writer,
    checked_length,
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
from clients.protocol.schema import Array, Field, FieldType, Struct, in_versions

__all__ = ["Compiled", "compile_struct", "compile_type", "field_default"]

_MISSING = object()


def compile_struct(
    fields: tuple[Field, ...],
    version: int,
    flexible: bool,
    target: type[Message] | None = None,
    owner: type[Message] | None = None,
) -> Compiled:
    """Reader and writer for ``fields`` at ``version`` (``flexible``: compact + tagged).

    The reader builds ``target`` instances (nested structs: ``owner``'s nested class of the
    struct's name) when ``target`` is given, else dicts.
    """
    base: dict[str, Any] = {}
    factories: list[tuple[str, Callable[[], Any]]] = []
    absent_checks: list[tuple[str, Callable[[Any], bool]]] = []
    regular: list[tuple[Field, FieldType, bool, bool]] = []
    tagged: list[tuple[int, Field, Compiled]] = []
    nested = owner if target is not None else None
    for field in fields:
        factory = default_factory(field)
        if not in_versions(field.versions, version):
            _set_default(base, factories, field, factory)
            if not field.ignorable:
                absent_checks.append((field.name, default_checker(field)))
            continue
        nullable = in_versions(field.nullable, version)
        compact = flexible if field.flexible is None else in_versions(field.flexible, version)
        if field.tag is not None and flexible and in_versions(field.tagged, version):
            _set_default(base, factories, field, factory)
            codec = compile_type(field.type, version, flexible, compact, nullable, nested)
            tagged.append((field.tag, field, codec))
        else:
            regular.append((field, field.type, compact, nullable))
    tagged.sort(key=lambda t: t[0])

    steps = _regular_steps(regular, version, flexible, nested)
    min_size = steps.min_size + (1 if flexible else 0)
    by_tag = {tag: (field.name, codec.read) for tag, field, codec in tagged}
    if target is None:
        read = _dict_reader(base, tuple(factories), steps.read, flexible, by_tag)
    else:
        read = _instance_reader(target, steps.read, flexible, by_tag)
    write = _struct_writer(tuple(absent_checks), steps, flexible, tagged)
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


@dataclass(frozen=True, slots=True)
class _Steps:
    """The regular (untagged) fields' read steps and write steps for dicts and instances."""

    read: tuple[Callable, ...]
    write_dict: tuple[Callable, ...]
    write_attrs: tuple[Callable, ...]
    min_size: int


def _regular_steps(
    regular: list[tuple[Field, FieldType, bool, bool]],
    version: int,
    flexible: bool,
    owner: type[Message] | None,
) -> _Steps:
    """Steps in declaration order; runs of fixed-width fields become one struct call."""
    read_steps: list[Callable] = []
    dict_steps: list[Callable] = []
    attr_steps: list[Callable] = []
    min_size = 0
    run: list[Field] = []

    def flush() -> None:
        nonlocal min_size
        if run:
            steps, size = _fixed_run(
                [f.name for f in run], [str(f.type) for f in run], [field_default(f) for f in run]
            )
            for out, step in zip((read_steps, dict_steps, attr_steps), steps):
                out.append(step)
            min_size += size
            run.clear()

    for field, ftype, compact, nullable in regular:
        if isinstance(ftype, str) and ftype in FIXED_FORMATS:
            run.append(field)
            continue
        flush()
        codec = compile_type(ftype, version, flexible, compact, nullable, owner)
        read_steps.append(_field_read_step(field.name, codec.read))
        dict_steps.append(_field_write_step(field.name, field_default(field), codec.write))
        attr_steps.append(_attr_write_step(field.name, codec.write))
        min_size += codec.min_size
    flush()
    return _Steps(tuple(read_steps), tuple(dict_steps), tuple(attr_steps), min_size)


def _fixed_run(
    names: list[str], kinds: list[str], defaults: list[Any]
) -> tuple[tuple[Callable, Callable, Callable], int]:
    packer = struct.Struct(">" + "".join(FIXED_FORMATS[k] for k in kinds))
    unpack, pack, size = packer.unpack_from, packer.pack, packer.size
    names_t, defaults_t = tuple(names), tuple(defaults)
    values_of = attrgetter(*names_t)

    def read(buf: memoryview, pos: int, out: dict) -> int:
        out.update(zip(names_t, unpack(buf, pos)))
        return pos + size

    def write_dict(value: dict, out: bytearray, inserts: list) -> None:
        out += pack(*map(value.get, names_t, defaults_t))

    if len(names_t) == 1:
        def write_attrs(value: Any, out: bytearray, inserts: list) -> None:
            out += pack(values_of(value))
    else:
        def write_attrs(value: Any, out: bytearray, inserts: list) -> None:
            out += pack(*values_of(value))

    return (read, write_dict, write_attrs), size


def _field_read_step(name: str, read: Reader) -> Callable:
    def step(buf: memoryview, pos: int, out: dict) -> int:
        out[name], pos = read(buf, pos)
        return pos

    return step


def _field_write_step(name: str, default: Any, write: Writer) -> Callable:
    def step(value: dict, out: bytearray, inserts: list) -> None:
        write(value.get(name, default), out, inserts)

    return step


def _attr_write_step(name: str, write: Writer) -> Callable:
    def step(value: Any, out: bytearray, inserts: list) -> None:
        write(getattr(value, name), out, inserts)

    return step


def _dict_reader(
    base: dict[str, Any],
    factories: tuple[tuple[str, Callable[[], Any]], ...],
    steps: tuple[Callable, ...],
    flexible: bool,
    by_tag: dict[int, tuple[str, Reader]],
) -> Reader:
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


def _instance_reader(
    target: type[Message],
    steps: tuple[Callable, ...],
    flexible: bool,
    by_tag: dict[int, tuple[str, Reader]],
) -> Reader:
    # Only the fields on the wire are collected: the constructor gives the rest their default.
    def read(buf: memoryview, pos: int) -> tuple[Message, int]:
        out: dict[str, Any] = {}
        for step in steps:
            pos = step(buf, pos, out)
        if flexible:
            pos = _read_tagged(buf, pos, out, by_tag)
        return target(**out), pos

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
    steps: _Steps,
    flexible: bool,
    tagged: list[tuple[int, Field, Compiled]],
) -> Writer:
    tagged_t = tuple((tag, f.name, c.write, default_checker(f)) for tag, f, c in tagged)
    dict_steps, attr_steps = steps.write_dict, steps.write_attrs

    def write(value: Any, out: bytearray, inserts: list) -> None:
        is_instance = isinstance(value, Message)
        if is_instance:
            for name, is_default in absent_checks:
                if not is_default(getattr(value, name)):
                    raise ProtocolError(f"field {name!r} is absent in this version but not default")
            for step in attr_steps:
                step(value, out, inserts)
        else:
            for name, is_default in absent_checks:
                if name in value and not is_default(value[name]):
                    raise ProtocolError(f"field {name!r} is absent in this version but not default")
            for step in dict_steps:
                step(value, out, inserts)
        if flexible:
            if tagged_t:
                _write_tagged(value, is_instance, out, inserts, tagged_t)
            else:
                out.append(0)

    return write


def _write_tagged(
    value: Any, is_instance: bool, out: bytearray, inserts: list, tagged: tuple
) -> None:
    items = []
    for tag, name, write, is_default in tagged:
        v = getattr(value, name) if is_instance else value.get(name, _MISSING)
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
    ftype: FieldType,
    version: int,
    flexible: bool,
    compact: bool,
    nullable: bool,
    owner: type[Message] | None = None,
) -> Compiled:
    """Reader and writer for a field's type at ``version`` (structs as ``owner``'s classes)."""
    if isinstance(ftype, str):
        return Compiled(
            primitive_reader(ftype, compact, nullable),
            primitive_writer(ftype, compact, nullable),
            primitive_min_size(ftype, compact),
        )
    if isinstance(ftype, Struct):
        target = None if owner is None else getattr(owner, ftype.name)
        inner = compile_struct(ftype.fields, version, flexible, target, owner)
        return nullable_struct(inner) if nullable else inner
    if isinstance(ftype, Array):
        if isinstance(ftype.of, str) and ftype.of in FIXED_FORMATS:
            return fixed_array_codec(FIXED_FORMATS[ftype.of], compact, nullable)
        elem = compile_type(ftype.of, version, flexible, compact, False, owner)
        return array_codec(elem, compact, nullable)
    raise ValueError(f"unknown field type {ftype!r}")
