"""The one error type of server configuration."""

from __future__ import annotations


class ConfigError(ValueError):
    """A bad or missing configuration value; the message starts with the key at fault."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason
