"""Client configuration by Kafka's names: definitions, parsing and validation.

Shared by the producer, consumer and admin client. A config is given as a mapping with
Kafka's dotted names (``{"bootstrap.servers": "h:9092", "acks": "all"}``) and/or Python
keyword arguments with underscores (``bootstrap_servers=...``). Values may be strings, as in
a ``.properties`` file, or Python values. Unknown keys are logged and ignored, as Kafka
does; a bad value raises ``ConfigError`` naming the key.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

if TYPE_CHECKING:
    from clients.net.sasl import SaslCredentials

from clients.common.errors import ConfigError
from clients.net.security import CLIENT_SECURITY_PROTOCOLS, ClientSecurity
from clients.net.tls import SSL_DEFAULTS, TlsConfigError

logger = logging.getLogger(__name__)


Parser = Callable[[Any], Any]


def parse_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("expected an integer")
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        raise ValueError("expected an integer") from None


def parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise ValueError("expected true or false")


def parse_str(value: Any) -> str:
    return str(value).strip()


def parse_list(value: Any) -> str:
    """A comma-separated list, kept as the joined string (as ``bootstrap.servers`` is)."""
    if isinstance(value, (list, tuple)):
        return ",".join(str(v).strip() for v in value)
    return str(value).strip()


@dataclass(frozen=True)
class ClientConfigKey:
    """One configuration key; ``default`` None with ``required`` means it must be given."""

    name: str
    parse: Parser
    default: Any = None
    required: bool = False
    check: Callable[[Any], str | None] | None = None


def at_least(minimum: int) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if value >= minimum else f"must be at least {minimum}"
    return check


def one_of(*choices: Any) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if value in choices else f"must be one of {', '.join(map(str, choices))}"
    return check


COMMON_KEYS: tuple[ClientConfigKey, ...] = (
    ClientConfigKey("bootstrap.servers", parse_list, required=True),
    ClientConfigKey("client.id", parse_str, ""),
    ClientConfigKey("request.timeout.ms", parse_int, 30000, check=at_least(0)),
    ClientConfigKey("socket.connection.setup.timeout.ms", parse_int, 10000, check=at_least(0)),
    ClientConfigKey("retry.backoff.ms", parse_int, 100, check=at_least(0)),
    ClientConfigKey("metadata.max.age.ms", parse_int, 300000, check=at_least(0)),
    ClientConfigKey("security.protocol", lambda value: parse_str(value).upper(), "PLAINTEXT",
                    check=one_of(*CLIENT_SECURITY_PROTOCOLS)),
    ClientConfigKey("sasl.mechanism", parse_str, "GSSAPI"),
    ClientConfigKey("sasl.username", parse_str, None),
    ClientConfigKey("sasl.password", str, None),
    ClientConfigKey("sasl.jaas.config", str, None),
) + tuple(ClientConfigKey(name, parse_str, None) for name in SSL_DEFAULTS)


def client_security(values: Mapping[str, Any]) -> ClientSecurity:
    """The connection security of resolved settings: `security.protocol` and `ssl.*`
    (the TLS files are read now; ConfigError names the key of a bad one)."""
    try:
        return ClientSecurity.from_config(values)
    except TlsConfigError as exc:
        raise ConfigError(f"invalid configuration {exc.key!r}: {exc.reason}") from None


def sasl_credentials_of(values: Mapping[str, Any]) -> "SaslCredentials | None":
    """The SASL credentials a resolved client config asks for (None without SASL)."""
    from clients.net.sasl import sasl_credentials

    try:
        return sasl_credentials(values)
    except ValueError as exc:
        raise ConfigError(f"invalid SASL configuration: {exc}") from None


def resolve_config(keys: tuple[ClientConfigKey, ...], given: Mapping[str, Any] | None,
                   overrides: Mapping[str, Any], client: str) -> dict[str, Any]:
    """Merge ``given`` and keyword ``overrides`` (underscores for dots) and validate.

    Returns every key of ``keys`` with its parsed value or default.
    """
    merged: dict[str, Any] = dict(given or {})
    for name, value in overrides.items():
        merged[name.replace("_", ".")] = value
    by_name = {key.name: key for key in keys}
    unknown = sorted(set(merged) - set(by_name))
    if unknown:
        logger.warning("%s configuration keys not used: %s", client, ", ".join(unknown))
    resolved: dict[str, Any] = {}
    for key in keys:
        raw = merged.get(key.name)
        if raw is None:
            if key.required:
                raise ConfigError(f"missing required configuration {key.name!r}")
            resolved[key.name] = key.default
            continue
        try:
            value = key.parse(raw)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"invalid value {raw!r} for configuration {key.name!r}: "
                              f"{exc}") from None
        problem = key.check(value) if key.check else None
        if problem:
            raise ConfigError(f"invalid value {raw!r} for configuration {key.name!r}: "
                              f"{problem}")
        resolved[key.name] = value
    if not resolved.get("client.id") and "client.id" in by_name:
        resolved["client.id"] = f"raftka-{client}"
    return resolved
