"""The one error type of server configuration: the clients' ConfigError, raised as
`ConfigError(key, reason)` so its message starts with the key at fault."""

from __future__ import annotations

from clients.common.errors import ConfigError

__all__ = ["ConfigError"]
