"""KEY=VALUE options of the console tools (`--property`, `--producer-property`, ...)."""

from __future__ import annotations


def parse_pairs(entries: list[str], option: str) -> dict[str, str]:
    """``["k=v", ...]`` as a dict; ValueError naming ``option`` for an entry without '='."""
    out: dict[str, str] = {}
    for entry in entries:
        key, sep, value = entry.partition("=")
        if not sep:
            raise ValueError(f"{option} expects KEY=VALUE, got {entry!r}")
        out[key.strip()] = value
    return out


def unescape(text: str) -> str:
    """Backslash escapes (``\\t``, ``\\n``) in a separator given on the command line."""
    return text.encode("latin-1", "backslashreplace").decode("unicode_escape")
