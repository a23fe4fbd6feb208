"""The codec's message schemas, built from the protocol description (Kafka's definitions).

No schema is written by hand: each field of a Kafka definition becomes a
:class:`~clients.protocol.schema.Field` named by the snake_case of Kafka's name, with Kafka's
type, versions, nullable and tagged versions, tag, default and flags. :data:`APIS` holds one
:class:`~clients.protocol.schema.Api` per API Raftka advertises
(:data:`clients.protocol.supported.SUPPORTED_VERSIONS`), built when first asked for.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterator, Mapping

from clients.protocol.api_keys import ApiKey
from clients.protocol.definitions import (
    FieldDefinition,
    MessageDefinition,
    StructDefinition,
    api_names,
    message_definition,
)
from clients.protocol.schema import (
    NO_DEFAULT,
    Api,
    Array,
    Field,
    FieldType,
    Struct,
    parse_versions,
)
from clients.protocol.supported import SUPPORTED_VERSIONS

PRIMITIVES = frozenset({"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64",
                        "uuid", "string", "bytes", "records"})
_INTEGERS = frozenset({"int8", "int16", "uint16", "int32", "uint32", "int64"})
_SNAKE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


class SchemaError(ValueError):
    """A definition the codec cannot use, or a supported range the definitions do not allow."""


def snake_case(name: str) -> str:
    """Kafka's CamelCase field name as ours: ``ZkMigrationReady`` -> ``zk_migration_ready``."""
    return _SNAKE.sub("_", name).lower()


def default_value(ftype: str, raw: str | None) -> object:
    """Kafka's default given as text (``"-1"``, ``"null"``, ``"0x7fffffff"``, ...) as a value;
    NO_DEFAULT for the type's zero value."""
    if raw is None:
        return NO_DEFAULT
    if raw == "null":
        return None
    if ftype in _INTEGERS:
        return int(raw, 0) if raw else NO_DEFAULT
    if ftype == "bool":
        return raw == "true"
    if ftype == "float64":
        return float(raw) if raw else NO_DEFAULT
    if ftype == "string":
        return raw
    raise SchemaError(f"a {ftype} field cannot default to {raw!r}")


def message_fields(definition: MessageDefinition) -> tuple[Field, ...]:
    """The schema of a message definition's body."""
    commons = {s["name"]: s for s in definition.get("commonStructs", [])}
    return _fields(definition["fields"], commons, {})


def _fields(definitions: list[FieldDefinition], commons: Mapping[str, StructDefinition],
            built: dict[str, Struct]) -> tuple[Field, ...]:
    return tuple(_field(f, commons, built) for f in definitions)


def _field(definition: FieldDefinition, commons: Mapping[str, StructDefinition],
           built: dict[str, Struct]) -> Field:
    kind = definition["type"]
    is_array = kind.startswith("[]")
    base = kind[2:] if is_array else kind
    element: FieldType
    if "fields" in definition:
        element = Struct(base, _fields(definition["fields"], commons, built))
    elif base in commons:
        if base not in built:
            built[base] = Struct(base, _fields(commons[base]["fields"], commons, built))
        element = built[base]
    elif base in PRIMITIVES:
        element = base
    else:
        raise SchemaError(f"field {definition['name']} has the unknown type {kind!r}")
    default = default_value("struct" if isinstance(element, Struct) else base,
                            definition.get("default"))
    if is_array and default is not None:
        default = NO_DEFAULT  # an array defaults to empty unless Kafka says null
    return Field(
        snake_case(definition["name"]),
        Array(element) if is_array else element,
        definition["versions"],
        nullable=definition.get("nullableVersions", "none"),
        tag=definition.get("tag"),
        tagged=definition.get("taggedVersions", "none"),
        default=default,
        ignorable=definition.get("ignorable", False),
        flexible=definition.get("flexibleVersions"),
    )


def build_api(key: ApiKey, versions: tuple[int, int]) -> Api:
    """The schema of API ``key``, advertised at ``versions``, from its two definitions."""
    name = api_names()[key]
    request = message_definition(name + "Request")
    response = message_definition(name + "Response")
    for definition in (request, response):
        valid = parse_versions(definition["validVersions"])
        if valid is None or not valid[0] <= versions[0] <= versions[1] <= valid[1]:
            raise SchemaError(f"{name} is advertised at {versions[0]}-{versions[1]}, outside "
                              f"{definition['name']}'s valid versions {definition['validVersions']}")
    if request["flexibleVersions"] != response["flexibleVersions"]:
        raise SchemaError(f"{name}'s request and response differ in flexible versions")
    return Api(key, name, versions, request["flexibleVersions"], message_fields(request),
               message_fields(response))


class _Apis(Mapping[ApiKey, Api]):
    """The advertised APIs' schemas by key, each built on first use."""

    def __getitem__(self, key: ApiKey) -> Api:
        if key not in SUPPORTED_VERSIONS:
            raise KeyError(key)
        return _api(ApiKey(key))

    def __iter__(self) -> Iterator[ApiKey]:
        return iter(SUPPORTED_VERSIONS)

    def __len__(self) -> int:
        return len(SUPPORTED_VERSIONS)

    def __contains__(self, key: object) -> bool:
        return key in SUPPORTED_VERSIONS


@lru_cache(maxsize=None)
def _api(key: ApiKey) -> Api:
    return build_api(key, SUPPORTED_VERSIONS[key])


APIS: Mapping[ApiKey, Api] = _Apis()
