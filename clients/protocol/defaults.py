"""Kafka's default values of schema fields, and checks of whether a value is its default.

A field's default is its declared one or, without one, its type's zero value (0, "", an
empty array, ...). A value equal to its default need not be written: absent fields of a
version and tagged fields are skipped when they hold it.
"""

from __future__ import annotations

import copy
from operator import attrgetter
from typing import Any, Callable

from clients.protocol.primitives import primitive_default
from clients.protocol.schema import NO_DEFAULT, Array, Field, FieldType, Struct


def field_default(field: Field) -> Any:
    """Kafka's default value of ``field`` (shared instance; copy before mutating)."""
    if field.default is not NO_DEFAULT:
        return field.default
    return type_default(field.type)


def type_default(ftype: FieldType) -> Any:
    """The zero value of a type; a struct's is a dict of its fields' defaults."""
    if isinstance(ftype, Array):
        return []
    if isinstance(ftype, Struct):
        return {f.name: field_default(f) for f in ftype.fields}
    return primitive_default(ftype)


def default_factory(field: Field) -> Callable[[], Any] | None:
    """A maker of fresh default values, or None when the default is immutable."""
    value = field_default(field)
    if isinstance(value, (list, dict)):
        return lambda: copy.deepcopy(value)
    return None


def default_checker(field: Field) -> Callable[[Any], bool]:
    """Whether a value equals the field's default (None always counts as default).

    A struct value may be a dict (missing keys count as default) or a generated message
    instance, which is default when it equals a fresh instance of its own class.
    """
    default = field_default(field)
    if isinstance(field.type, Struct):
        items = tuple(default.items())

        def struct_is_default(v: Any) -> bool:
            if v is None:
                return True
            if v.__class__ is dict:
                return all(v.get(k, d) == d for k, d in items)
            return is_default_instance(v)

        return struct_is_default
    if isinstance(field.type, Array):
        if default is None:
            return lambda v: v is None
        return lambda v: v is None or len(v) == 0
    if default is None:
        return lambda v: v is None
    return lambda v: v is None or v == default


# Per message class: a getter of all its field values, and those values in a fresh instance.
_class_defaults: dict[type, tuple[Callable[[Any], tuple], tuple]] = {}


def is_default_instance(value: Any) -> bool:
    """Whether a generated message instance holds its class's defaults in every field."""
    entry = _class_defaults.get(value.__class__)
    if entry is None:
        entry = _class_defaults[value.__class__] = _defaults_of(value.__class__)
    values_of, defaults = entry
    return values_of(value) == defaults


def _defaults_of(cls: type) -> tuple[Callable[[Any], tuple], tuple]:
    names = cls.__slots__
    if not names:
        return (lambda value: ()), ()
    getter = attrgetter(*names)
    values_of = getter if len(names) > 1 else (lambda value: (getter(value),))
    return values_of, values_of(cls())
