"""The declarative schema language for Kafka messages.

A message is a tuple of :class:`Field`; a field's type is a primitive name, a
:class:`Struct` or an :class:`Array`. Version ranges use Kafka's notation: ``"3+"``,
``"0-2"``, ``"5"`` or ``"none"``. Field names are the snake_case of Kafka's names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

BOOL = "bool"
INT8 = "int8"
INT16 = "int16"
UINT16 = "uint16"
INT32 = "int32"
UINT32 = "uint32"
INT64 = "int64"
FLOAT64 = "float64"
UUID = "uuid"
STRING = "string"
BYTES = "bytes"
RECORDS = "records"

MAX_VERSION = 0x7FFF


class _NoDefault:
    """Marker: the field takes Kafka's default for its type (0, "", empty array, ...)."""

    _instance: _NoDefault | None = None

    def __new__(cls) -> _NoDefault:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT = _NoDefault()


@dataclass(frozen=True, slots=True)
class Struct:
    """A named group of fields (Kafka's struct; the name is Kafka's CamelCase struct name)."""

    name: str
    fields: tuple[Field, ...]


@dataclass(frozen=True, slots=True)
class Array:
    """An array of a primitive type or of a struct."""

    of: Union[str, Struct]


FieldType = Union[str, Struct, Array]


@dataclass(frozen=True, slots=True)
class Field:
    """One field: ``versions`` it exists in, ``nullable`` versions, and optionally a tag."""

    name: str
    type: FieldType
    versions: str
    nullable: str = "none"
    tag: int | None = None
    tagged: str = "none"
    # ``None`` is Kafka's "null" default; NO_DEFAULT means the type's zero value.
    default: object = NO_DEFAULT
    ignorable: bool = False
    # Overrides the message's flexible versions for this field (only the request header's
    # client id uses it: it stays a non-compact string in flexible headers).
    flexible: str | None = None


@dataclass(frozen=True, slots=True)
class Api:
    """One Kafka API: its key, supported version range, flexible versions and both bodies."""

    key: int
    name: str
    versions: tuple[int, int]
    flexible: str
    request: tuple[Field, ...]
    response: tuple[Field, ...]


def parse_versions(spec: str) -> tuple[int, int] | None:
    """Kafka's version-range notation as an inclusive (low, high); ``None`` for "none"."""
    if spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), MAX_VERSION
    low, sep, high = spec.partition("-")
    if sep:
        return int(low), int(high)
    return int(spec), int(spec)


def in_versions(spec: str, version: int) -> bool:
    """Whether ``version`` lies in the range ``spec``."""
    bounds = parse_versions(spec)
    return bounds is not None and bounds[0] <= version <= bounds[1]
