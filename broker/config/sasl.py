"""SASL settings of a node's listeners, read and checked at start-up.

Kafka's keys: `sasl.enabled.mechanisms` (or `listener.name.<l>.sasl.enabled.mechanisms`),
PLAIN's users in `listener.name.<l>.plain.sasl.jaas.config` (`user_<name>="<password>"`),
and, on a SASL inter-broker listener, `sasl.mechanism.inter.broker.protocol` with the
username and password of that mechanism's JAAS config on the inter-broker listener.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from broker.config.endpoints import Listener
from broker.config.errors import ConfigError
from clients.net.jaas import JaasConfigError, JaasEntry, parse_jaas
from clients.net.sasl import SaslCredentials
from broker.sasl.mechanisms import PLAIN, SUPPORTED_MECHANISMS
from broker.sasl.session import ListenerSasl

SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
LISTENER_PREFIX = "listener.name."
# Keys a listener may override with its `listener.name.<l>.` prefix.
LISTENER_KEYS = ("sasl.enabled.mechanisms",)


# How this node authenticates to another: mechanism, user name and password.
SaslClientCredentials = SaslCredentials


def jaas_key(listener: str, mechanism: str) -> str:
    return f"{LISTENER_PREFIX}{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"


def is_listener_sasl_key(key: str) -> bool:
    """Whether `key` is a listener-prefixed SASL key this module reads."""
    if not key.startswith(LISTENER_PREFIX):
        return False
    rest = key[len(LISTENER_PREFIX):].split(".", 1)
    if len(rest) != 2:
        return False
    suffix = rest[1]
    return suffix in LISTENER_KEYS or any(
        suffix == f"{m.lower()}.sasl.jaas.config" for m in SUPPORTED_MECHANISMS)


def _jaas(props: Mapping[str, str], listener: str, mechanism: str) -> JaasEntry | None:
    key = jaas_key(listener, mechanism)
    text = props.get(key)
    if text is None:
        return None
    try:
        return parse_jaas(text)
    except JaasConfigError as exc:
        raise ConfigError(key, str(exc)) from None


def _mechanisms(props: Mapping[str, str], listener: str) -> tuple[str, tuple[str, ...]]:
    key = f"{LISTENER_PREFIX}{listener.lower()}.sasl.enabled.mechanisms"
    if key not in props:
        key = "sasl.enabled.mechanisms"
    raw = props.get(key, "SCRAM-SHA-256,SCRAM-SHA-512")
    names = tuple(m.strip() for m in raw.split(",") if m.strip())
    if not names:
        raise ConfigError(key, "names no mechanism")
    for name in names:
        if name not in SUPPORTED_MECHANISMS:
            raise ConfigError(key, f"mechanism {name} is not supported (Raftka supports "
                                   f"{', '.join(SUPPORTED_MECHANISMS)})")
    return key, names


def listener_sasl(props: Mapping[str, str], listeners: Sequence[Listener],
                  max_reauth_ms: int) -> dict[str, ListenerSasl]:
    """The SASL settings of every SASL listener, by listener name; ConfigError names the
    key of anything missing or unsupported."""
    result: dict[str, ListenerSasl] = {}
    for listener in listeners:
        if listener.security_protocol not in SASL_PROTOCOLS:
            continue
        _, mechanisms = _mechanisms(props, listener.name)
        users: dict[str, str] = {}
        if PLAIN in mechanisms:
            entry = _jaas(props, listener.name, PLAIN)
            if entry is None:
                raise ConfigError(jaas_key(listener.name, PLAIN),
                                  f"is required: listener {listener.name} enables PLAIN")
            users = entry.plain_users
        result[listener.name] = ListenerSasl(mechanisms, users, max_reauth_ms)
    return result


def inter_broker_credentials(props: Mapping[str, str], listener: Listener,
                             settings: Mapping[str, ListenerSasl]) -> SaslClientCredentials | None:
    """The credentials brokers use on a SASL inter-broker listener (None otherwise)."""
    if listener.security_protocol not in SASL_PROTOCOLS:
        return None
    key = "sasl.mechanism.inter.broker.protocol"
    mechanism = props.get(key, "SCRAM-SHA-512").strip()
    if mechanism not in SUPPORTED_MECHANISMS:
        raise ConfigError(key, f"mechanism {mechanism} is not supported (Raftka supports "
                               f"{', '.join(SUPPORTED_MECHANISMS)})")
    enabled = settings[listener.name].mechanisms
    if mechanism not in enabled:
        raise ConfigError(key, f"{mechanism} is not enabled on the inter-broker listener "
                               f"{listener.name} ({', '.join(enabled)})")
    jaas = jaas_key(listener.name, mechanism)
    entry = _jaas(props, listener.name, mechanism)
    if entry is None or not entry.options.get("username") or "password" not in entry.options:
        raise ConfigError(jaas, "is required with username and password: brokers "
                                f"authenticate to each other with {mechanism}")
    return SaslClientCredentials(mechanism, entry.options["username"], entry.options["password"])
