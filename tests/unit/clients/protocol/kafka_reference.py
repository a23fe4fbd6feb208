"""Apache Kafka's message definitions as reference data for the tests, with the tests' own
reading of Kafka's version ranges and field names (kept apart from the code under test)."""

from __future__ import annotations

import re
from functools import lru_cache

from clients.protocol.definitions import MessageDefinition, message_definition

_SNAKE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake_case(name: str) -> str:
    """Kafka field name to ours, by the project's fixed rule."""
    return _SNAKE.sub("_", name).lower()


@lru_cache(maxsize=None)
def load_message(name: str) -> MessageDefinition:
    """Kafka's definition of the message ``name`` (shared by the callers: do not change it)."""
    return message_definition(name)


def parse_range(spec: str | None) -> tuple[int, int] | None:
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), 0x7FFF
    low, sep, high = spec.partition("-")
    return (int(low), int(high)) if sep else (int(spec), int(spec))


def in_range(spec: str | None, version: int) -> bool:
    bounds = parse_range(spec)
    return bounds is not None and bounds[0] <= version <= bounds[1]
