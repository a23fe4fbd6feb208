"""The configuration error, one class for the clients' settings and the server's."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration value is missing or invalid; the message names the key.

    `ConfigError(key, reason)` reads "key: reason" and keeps both (the server's configuration
    raises it so); `ConfigError(message)` is a sentence naming the key (the clients'), as
    Kafka's ConfigException takes either."""

    def __init__(self, key_or_message: str, reason: str | None = None) -> None:
        if reason is None:
            super().__init__(key_or_message)
            self.key: str | None = None
            self.reason = key_or_message
        else:
            super().__init__(f"{key_or_message}: {reason}")
            self.key = key_or_message
            self.reason = reason
