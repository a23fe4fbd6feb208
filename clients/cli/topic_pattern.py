"""`--topic` as Kafka's tools read it: a regular expression naming the topics it matches
whole (Kafka's IncludeList), so `orders` is one topic and `orders-.*` or `a,b` are several."""

from __future__ import annotations

import re
from typing import Iterable


def compile_topic_pattern(text: str) -> re.Pattern[str]:
    """The pattern of a `--topic` value, normalised as Kafka's IncludeList: surrounding
    blanks and quotes dropped, spaces removed, commas meaning "or". ValueError if invalid."""
    normalised = text.strip().replace(",", "|").replace(" ", "").strip("\"'")
    try:
        return re.compile(normalised)
    except re.error as exc:
        raise ValueError(f"Invalid topic regex '{text}': {exc}") from None


def matching_topics(pattern: re.Pattern[str], names: Iterable[str],
                    exclude_internal: bool = False,
                    internal: Iterable[str] = ()) -> list[str]:
    """The names the pattern matches whole, sorted; internal topics (those listed in
    `internal`) left out with `exclude_internal`."""
    hidden = set(internal) if exclude_internal else set()
    return sorted(name for name in names
                  if pattern.fullmatch(name) is not None and name not in hidden)
