"""Kafka's protocol, as facts: every message and KRaft metadata record Apache Kafka defines.

``kafka-protocol.json`` (beside this module, shipped with the package) is derived from Kafka's
JSON definitions by :mod:`clients.protocol.definitions.derive` (``scripts/derive-protocol``)
and committed. Each definition keeps Kafka's key names; an absent optional key means Kafka's
default (no nullable or tagged versions, no explicit default, flags false). Version ranges use
Kafka's notation (``"3+"``, ``"0-2"``, ``"5"``, ``"none"``): see
:func:`clients.protocol.schema.parse_versions`.

The loaders return fresh copies: callers may change what they get.
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from importlib import resources
from typing import Any, NotRequired, TypedDict

DESCRIPTION_FILE = "kafka-protocol.json"
# Raised whenever the file's shape changes, so that readers and the committed file agree.
FORMAT_VERSION = 1


class FieldDefinition(TypedDict):
    """One field of a message, record or struct (nested ``fields`` make it a struct)."""

    name: str
    type: str  # a primitive, "[]"-prefixed for arrays, or a struct name
    versions: str
    nullableVersions: NotRequired[str]
    taggedVersions: NotRequired[str]
    tag: NotRequired[int]
    default: NotRequired[str]  # as text, the way Kafka's generator reads it: "-1", "null", ...
    entityType: NotRequired[str]
    flexibleVersions: NotRequired[str]  # overrides the message's (the request header's ClientId)
    ignorable: NotRequired[bool]
    mapKey: NotRequired[bool]
    zeroCopy: NotRequired[bool]
    fields: NotRequired[list[FieldDefinition]]


class StructDefinition(TypedDict):
    """A struct shared by several fields of one message (Kafka's ``commonStructs``)."""

    name: str
    versions: str
    fields: list[FieldDefinition]


class MessageDefinition(TypedDict):
    """A request, response, header, data message or metadata record."""

    name: str
    type: str  # "request", "response", "header", "data" or "metadata"
    validVersions: str
    flexibleVersions: str
    fields: list[FieldDefinition]
    apiKey: NotRequired[int]  # the API key; a metadata record's type id
    deprecatedVersions: NotRequired[str]
    latestVersionUnstable: NotRequired[bool]
    listeners: NotRequired[list[str]]
    commonStructs: NotRequired[list[StructDefinition]]


class DescriptionFormatError(RuntimeError):
    """The packaged description is of another format than this code reads."""


@lru_cache(maxsize=1)
def _description() -> dict[str, Any]:
    text = resources.files(__name__).joinpath(DESCRIPTION_FILE).read_text(encoding="utf-8")
    description = json.loads(text)
    if description.get("formatVersion") != FORMAT_VERSION:
        raise DescriptionFormatError(
            f"{DESCRIPTION_FILE} has format {description.get('formatVersion')!r}, "
            f"this code reads {FORMAT_VERSION}: run scripts/derive-protocol")
    return description


def _definition(section: str, name: str) -> MessageDefinition:
    try:
        definition = _description()[section][name]
    except KeyError:
        raise KeyError(f"Kafka defines no {section} entry {name!r}") from None
    return copy.deepcopy(definition)


def message_definition(name: str) -> MessageDefinition:
    """Kafka's definition of the message ``name`` (e.g. "FetchRequest", "RequestHeader")."""
    return _definition("messages", name)


def metadata_record_definition(name: str) -> MessageDefinition:
    """Kafka's definition of the metadata record ``name`` (e.g. "PartitionChangeRecord")."""
    return _definition("metadataRecords", name)


def message_names() -> list[str]:
    """The names of every message, sorted."""
    return sorted(_description()["messages"])


def metadata_record_names() -> list[str]:
    """The names of every metadata record, sorted."""
    return sorted(_description()["metadataRecords"])


def api_names() -> dict[int, str]:
    """Kafka's name of each API by key (e.g. 0: "Produce"), from its request's definition."""
    return {
        definition["apiKey"]: name.removesuffix("Request")
        for name, definition in _description()["messages"].items()
        if definition["type"] == "request"
    }
