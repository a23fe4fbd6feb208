"""Derives the project's protocol description from Apache Kafka's JSON definitions.

Kafka describes each message of its protocol (``clients/src/main/resources/common/message``)
and each KRaft metadata record (``metadata/src/main/resources/common/metadata``) in a JSON
file with ``//`` comments. This module keeps their facts (names, types, api keys, version
ranges, fields with their versions, tags and defaults, common structs) and drops the rest:
comments and the ``about`` prose. A key it does not know stops the derivation, so no fact of a
newer Kafka release is dropped unnoticed.

Normal form, so that the same facts always give the same bytes: keys sorted; ``default``
written as a string, as Kafka's generator reads it; ``tag`` an integer; the flags
``ignorable``, ``mapKey``, ``zeroCopy`` and ``latestVersionUnstable`` present only when true;
``listeners`` sorted; fields and common structs in their wire order. The file holds one
definition per line.

    python -m clients.protocol.definitions.derive --messages DIR --metadata DIR [--check]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Mapping, NoReturn, Sequence

from clients.protocol.definitions import DESCRIPTION_FILE, FORMAT_VERSION

_VERSIONS = re.compile(r"none|\d+|\d+\+|\d+-\d+")
_FLAGS = ("ignorable", "mapKey", "zeroCopy", "latestVersionUnstable")
_DROPPED = frozenset({"about"})

# Per kind of object: required keys and optional keys (each with its normal form).
_MESSAGE_REQUIRED = ("name", "type", "validVersions", "flexibleVersions", "fields")
_MESSAGE_OPTIONAL = ("apiKey", "deprecatedVersions", "latestVersionUnstable", "listeners",
                     "commonStructs")
_FIELD_REQUIRED = ("name", "type", "versions")
_FIELD_OPTIONAL = ("nullableVersions", "taggedVersions", "tag", "default", "mapKey", "ignorable",
                   "entityType", "zeroCopy", "flexibleVersions", "fields")
_STRUCT_REQUIRED = ("name", "versions", "fields")
_MESSAGE_TYPES = frozenset({"request", "response", "header", "data", "metadata"})


class DefinitionError(ValueError):
    """A Kafka definition file that cannot be read or holds something unexpected."""


def strip_comments(text: str) -> str:
    """``text`` without its ``//`` comments (outside string literals; newlines are kept)."""
    out: list[str] = []
    i, n, in_string = 0, len(text), False
    while i < n:
        c = text[i]
        if in_string:
            if c == "\\":
                out.append(text[i:i + 2])
                i += 2
                continue
            in_string = c != '"'
        elif c == '"':
            in_string = True
        elif text.startswith("//", i):
            newline = text.find("\n", i)
            i = n if newline < 0 else newline
            continue
        out.append(c)
        i += 1
    return "".join(out)


def read_definition(path: Path) -> dict[str, Any]:
    """One Kafka definition file, parsed (comments stripped)."""
    try:
        parsed = json.loads(strip_comments(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DefinitionError(f"{path}: {exc}") from None
    if not isinstance(parsed, dict):
        raise DefinitionError(f"{path}: not a JSON object")
    return parsed


def _fail(where: str, problem: str) -> NoReturn:
    raise DefinitionError(f"{where}: {problem}")


def _check_keys(source: Mapping[str, Any], required: Sequence[str], optional: Sequence[str],
                where: str) -> None:
    missing = [key for key in required if key not in source]
    if missing:
        _fail(where, f"missing {', '.join(missing)}")
    unknown = sorted(set(source) - set(required) - set(optional) - _DROPPED)
    if unknown:
        _fail(where, f"unknown key {', '.join(unknown)}")


def _text(value: Any, where: str, key: str) -> str:
    if not isinstance(value, str) or not value:
        _fail(where, f"{key} must be a non-empty string, not {value!r}")
    return value


def _versions(value: Any, where: str, key: str) -> str:
    if not isinstance(value, str) or not _VERSIONS.fullmatch(value):
        _fail(where, f"{key} is not a version range: {value!r}")
    return value


def _integer(value: Any, where: str, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        _fail(where, f"{key} must be an integer, not {value!r}")
    try:
        return int(value)
    except ValueError:
        _fail(where, f"{key} must be an integer, not {value!r}")


def _default(value: Any, where: str) -> str:
    """Kafka's generator reads a default as text: true/false, digits, "null" or a string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, str)):
        return str(value)
    _fail(where, f"default must be a string, number or boolean, not {value!r}")


def _flags(source: Mapping[str, Any], into: dict[str, Any], where: str) -> None:
    for key in _FLAGS:
        if key in source:
            if not isinstance(source[key], bool):
                _fail(where, f"{key} must be true or false, not {source[key]!r}")
            if source[key]:
                into[key] = True


def _fields(value: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        _fail(where, "fields must be a list")
    derived = []
    for index, field in enumerate(value):
        if not isinstance(field, dict):
            _fail(f"{where}.fields[{index}]", "not an object")
        derived.append(_field(field, f"{where}.fields[{index}]"))
    return derived


def _field(source: Mapping[str, Any], where: str) -> dict[str, Any]:
    _check_keys(source, _FIELD_REQUIRED, _FIELD_OPTIONAL, where)
    where = f"{where}({source['name']})"
    field: dict[str, Any] = {
        "name": _text(source["name"], where, "name"),
        "type": _text(source["type"], where, "type"),
        "versions": _versions(source["versions"], where, "versions"),
    }
    for key in ("nullableVersions", "taggedVersions", "flexibleVersions"):
        if key in source:
            field[key] = _versions(source[key], where, key)
    if "tag" in source:
        field["tag"] = _integer(source["tag"], where, "tag")
    if ("tag" in field) != ("taggedVersions" in field):
        _fail(where, "tag and taggedVersions go together")
    if "default" in source:
        field["default"] = _default(source["default"], where)
    if "entityType" in source:
        field["entityType"] = _text(source["entityType"], where, "entityType")
    _flags(source, field, where)
    if "fields" in source:
        field["fields"] = _fields(source["fields"], where)
    return field


def derive_definition(source: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The facts of one parsed Kafka definition, in normal form (``where`` names it in errors)."""
    _check_keys(source, _MESSAGE_REQUIRED, _MESSAGE_OPTIONAL, where)
    kind = source["type"]
    if kind not in _MESSAGE_TYPES:
        _fail(where, f"unknown message type {kind!r}")
    definition: dict[str, Any] = {
        "name": _text(source["name"], where, "name"),
        "type": kind,
        "validVersions": _versions(source["validVersions"], where, "validVersions"),
        "flexibleVersions": _versions(source["flexibleVersions"], where, "flexibleVersions"),
        "fields": _fields(source["fields"], where),
    }
    if "apiKey" in source:
        definition["apiKey"] = _integer(source["apiKey"], where, "apiKey")
    if "deprecatedVersions" in source:
        definition["deprecatedVersions"] = _versions(
            source["deprecatedVersions"], where, "deprecatedVersions")
    if "listeners" in source:
        listeners = source["listeners"]
        if not isinstance(listeners, list) or not all(isinstance(x, str) for x in listeners):
            _fail(where, "listeners must be a list of strings")
        definition["listeners"] = sorted(listeners)
    _flags(source, definition, where)
    if "commonStructs" in source:
        if not isinstance(source["commonStructs"], list):
            _fail(where, "commonStructs must be a list")
        structs = []
        for index, struct in enumerate(source["commonStructs"]):
            struct_where = f"{where}.commonStructs[{index}]"
            if not isinstance(struct, dict):
                _fail(struct_where, "not an object")
            _check_keys(struct, _STRUCT_REQUIRED, (), struct_where)
            structs.append({
                "name": _text(struct["name"], struct_where, "name"),
                "versions": _versions(struct["versions"], struct_where, "versions"),
                "fields": _fields(struct["fields"], struct_where),
            })
        definition["commonStructs"] = structs
    return definition


def derive_directory(directory: Path) -> dict[str, dict[str, Any]]:
    """Every ``*.json`` definition in ``directory``, by name."""
    if not directory.is_dir():
        raise DefinitionError(f"{directory}: not a directory")
    definitions: dict[str, dict[str, Any]] = {}
    for path in sorted(directory.glob("*.json")):
        definition = derive_definition(read_definition(path), path.name)
        if definition["name"] in definitions:
            raise DefinitionError(f"{path.name}: a second definition of {definition['name']}")
        definitions[definition["name"]] = definition
    if not definitions:
        raise DefinitionError(f"{directory}: no *.json definitions")
    return definitions


def derive(messages_dir: Path, metadata_dir: Path) -> dict[str, Any]:
    """The whole description: messages and metadata records, with the format version."""
    return {
        "formatVersion": FORMAT_VERSION,
        "messages": derive_directory(messages_dir),
        "metadataRecords": derive_directory(metadata_dir),
    }


def render(description: Mapping[str, Any]) -> str:
    """The description as compact JSON, one definition per line (so a diff names the message)."""

    def compact(value: Any) -> str:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)

    sections = []
    for section in ("messages", "metadataRecords"):
        entries = description[section]
        lines = ",\n".join(f"{compact(name)}:{compact(entries[name])}" for name in sorted(entries))
        sections.append(f'"{section}":{{\n{lines}\n}}')
    version = compact(description["formatVersion"])
    return f'{{"formatVersion":{version},\n' + ",\n".join(sections) + "}\n"


class _OneLineParser(argparse.ArgumentParser):
    # Not clients.cli's parser of the same behaviour: clients.cli imports clients.protocol,
    # and importing it back would tie the two packages in a cycle.
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = _OneLineParser(
        prog="derive-protocol",
        description="Derive the protocol description from Apache Kafka's JSON definitions.")
    parser.add_argument("--messages", type=Path, required=True, metavar="DIR",
                        help="Kafka's message definitions (common/message in Kafka's clients)")
    parser.add_argument("--metadata", type=Path, required=True, metavar="DIR",
                        help="Kafka's metadata record definitions (common/metadata)")
    parser.add_argument("--output", type=Path, default=Path(__file__).with_name(DESCRIPTION_FILE),
                        metavar="FILE", help="where to write it (default: the packaged file)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if FILE differs from the derivation")
    args = parser.parse_args(argv)
    try:
        text = render(derive(args.messages, args.metadata))
        if args.check:
            current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
            if current != text:
                print(f"derive-protocol: {args.output} is not current; run without --check",
                      file=sys.stderr)
                return 1
            return 0
        args.output.write_text(text, encoding="utf-8")
    except (DefinitionError, OSError) as exc:
        print(f"derive-protocol: {exc}", file=sys.stderr)
        return 1
    description = json.loads(text)
    print(f"{args.output}: {len(description['messages'])} messages, "
          f"{len(description['metadataRecords'])} metadata records, {len(text)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
