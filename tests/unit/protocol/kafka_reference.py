"""Reads Apache Kafka's JSON message definitions (reference data for the tests only)."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from tests.conftest import KAFKA_MESSAGES_DIR

_SNAKE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake_case(name: str) -> str:
    """Kafka field name to ours, by the project's fixed rule."""
    return _SNAKE.sub("_", name).lower()


def _strip_comments(text: str) -> str:
    """Drop ``//`` comments outside string literals (the files are JSON with comments)."""
    out: list[str] = []
    i, n, in_string = 0, len(text), False
    while i < n:
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_string = False
        elif c == '"':
            in_string = True
            out.append(c)
        elif text.startswith("//", i):
            newline = text.find("\n", i)
            i = n if newline < 0 else newline
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


@lru_cache(maxsize=None)
def load_message(name: str, directory: Path = KAFKA_MESSAGES_DIR) -> dict[str, Any]:
    return json.loads(_strip_comments((directory / f"{name}.json").read_text()))


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
