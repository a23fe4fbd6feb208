"""Kafka's SCRAM credential arguments, as `kafka-storage.sh format --add-scram` and
`kafka-configs.sh --add-config` take them: `SCRAM-SHA-256=[name=alice,password=secret]`,
`SCRAM-SHA-512=[iterations=8192,password=secret]`; a value may be double-quoted to hold
',' or ']'."""

from __future__ import annotations

import re
from dataclasses import dataclass

from clients.protocol.scram_types import MAX_ITERATIONS, MECHANISM_IDS, MIN_ITERATIONS

DEFAULT_ITERATIONS = 4096
_ENTRY = re.compile(r'\s*([A-Za-z]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^,\]]*)\s*(,|$)')


class ScramArgumentError(ValueError):
    """The argument is malformed; the message never repeats a password."""


@dataclass(frozen=True)
class ScramArgument:
    """One parsed argument: mechanism, optional user name, password, iterations."""

    mechanism: str
    name: str | None
    password: str
    iterations: int

    def __repr__(self) -> str:
        return f"ScramArgument({self.mechanism}, name={self.name!r}, iterations={self.iterations})"


def _fields(text: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    pos = 0
    while pos < len(text):
        match = _ENTRY.match(text, pos)
        if match is None or match.end() == pos:
            raise ScramArgumentError("expected key=value pairs separated by ','")
        key, value = match.group(1).lower(), match.group(2)
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        if key in fields:
            raise ScramArgumentError(f"{key} is given twice")
        fields[key] = value
        pos = match.end()
    return fields


def parse_scram_argument(text: str, *, need_name: bool) -> ScramArgument:
    """Parse `MECHANISM=[key=value,...]`; ScramArgumentError says what is wrong."""
    mechanism, sep, rest = text.partition("=")
    mechanism = mechanism.strip()
    if not sep:
        raise ScramArgumentError("expected MECHANISM=[key=value,...]")
    if mechanism not in MECHANISM_IDS:
        raise ScramArgumentError(f"unknown SCRAM mechanism {mechanism!r} (use "
                                 f"{' or '.join(MECHANISM_IDS)})")
    rest = rest.strip()
    if not (rest.startswith("[") and rest.endswith("]")):
        raise ScramArgumentError(f"{mechanism}: the value must be in [ ]")
    fields = _fields(rest[1:-1])
    unknown = sorted(set(fields) - {"name", "password", "iterations"})
    if unknown:
        raise ScramArgumentError(f"{mechanism}: unknown key {unknown[0]}")
    name = fields.get("name")
    if need_name and not name:
        raise ScramArgumentError(f"{mechanism}: name is required")
    if not need_name and name is not None:
        raise ScramArgumentError(f"{mechanism}: the user is given by --entity-name, not name=")
    password = fields.get("password")
    if not password:
        raise ScramArgumentError(f"{mechanism}: password is required")
    try:
        iterations = int(fields.get("iterations", DEFAULT_ITERATIONS))
    except ValueError:
        raise ScramArgumentError(f"{mechanism}: iterations must be a number") from None
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ScramArgumentError(f"{mechanism}: iterations must be between {MIN_ITERATIONS} "
                                 f"and {MAX_ITERATIONS}")
    return ScramArgument(mechanism, name, password, iterations)
