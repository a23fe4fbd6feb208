"""Kafka's JAAS config values (`sasl.jaas.config`): one login module with its options.

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_alice="alice-secret";

Only the options matter to Raftka; the module class and flag are checked for shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HEADER = re.compile(r"\s*([A-Za-z_$][\w.$]*)\s+(required|requisite|sufficient|optional)\s*")
_OPTION = re.compile(r"\s*([\w.\-]+)\s*=\s*(\"(?:[^\"\\]|\\.)*\"|[^\s;\"]+)\s*")


class JaasConfigError(ValueError):
    """The text is not one login module entry."""


@dataclass(frozen=True)
class JaasEntry:
    """One login module: its class name, control flag and options."""

    module: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        # Options carry passwords; keep them out of logs.
        return f"JaasEntry(module={self.module!r}, options={sorted(self.options)})"

    @property
    def plain_users(self) -> dict[str, str]:
        """PLAIN's `user_<name>="<password>"` options, by user name."""
        return {key[5:]: value for key, value in self.options.items()
                if key.startswith("user_") and len(key) > 5}


def parse_jaas(text: str) -> JaasEntry:
    """Parse one JAAS entry; JaasConfigError names what is wrong (never a password)."""
    match = _HEADER.match(text)
    if match is None:
        raise JaasConfigError("expected '<LoginModule class> required ...;'")
    module, flag = match.group(1), match.group(2)
    pos = match.end()
    options: dict[str, str] = {}
    while True:
        rest = text[pos:].strip()
        if rest == ";":
            break
        if not rest:
            raise JaasConfigError("must end with ';'")
        option = _OPTION.match(text, pos)
        if option is None:
            raise JaasConfigError(f"cannot parse an option at character {pos}")
        key, raw = option.group(1), option.group(2)
        if raw.startswith('"'):
            raw = re.sub(r"\\(.)", r"\1", raw[1:-1])
        options[key] = raw
        pos = option.end()
    return JaasEntry(module, flag, options)
