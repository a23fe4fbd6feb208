"""A node's TLS: the `ssl.*` keys per listener (`listener.name.<name>.ssl.*` over the plain
keys, as Kafka reads them) and the contexts built from them once, at start-up."""

from __future__ import annotations

import re
import ssl
from typing import Mapping

from broker.config.errors import ConfigError
from clients.net.security import ClientSecurity
from clients.net.tls import SSL_DEFAULTS, TlsConfigError, TlsSettings
from clients.net.tls_context import build_context

_LISTENER_PREFIX = re.compile(r"^listener\.name\.([^.]+)\.(.+)$")


def listener_override(key: str) -> tuple[str, str] | None:
    """(listener name upper-cased, base key) of a `listener.name.<name>.ssl.*` key."""
    match = _LISTENER_PREFIX.match(key)
    if match is None or match.group(2) not in SSL_DEFAULTS:
        return None
    return match.group(1).upper(), match.group(2)


def listener_tls_settings(originals: Mapping[str, str], listener_name: str) -> TlsSettings:
    """The TLS settings of `listener_name`: its prefixed keys win over the plain ones."""
    prefixed: dict[str, tuple[str, str]] = {}
    for key, value in originals.items():
        found = listener_override(key)
        if found is not None and found[0] == listener_name.upper():
            prefixed[found[1]] = (key, value)

    def lookup(base: str) -> tuple[str, str | None]:
        if base in prefixed:
            return prefixed[base]
        return base, originals.get(base)

    try:
        return TlsSettings.from_values(lookup)
    except TlsConfigError as exc:
        raise ConfigError(exc.key, exc.reason) from None


def listener_client_security(originals: Mapping[str, str], listener_name: str
                             ) -> ClientSecurity:
    """How a client with a node's own settings reaches that node's `listener_name` (the
    protocol from listener.security.protocol.map, TLS from the listener's ssl.* keys)."""
    from broker.config.definitions import SERVER_KEYS
    from broker.config.endpoints import parse_security_protocol_map

    default_map = next(k.default for k in SERVER_KEYS
                       if k.name == "listener.security.protocol.map")
    key = "listener.security.protocol.map"
    protocols = parse_security_protocol_map(originals.get(key) or default_map or "", key)
    protocol = protocols.get(listener_name.upper(), "PLAINTEXT")
    settings = (listener_tls_settings(originals, listener_name)
                if protocol in ("SSL", "SASL_SSL") else None)
    try:
        return ClientSecurity.from_tls_settings(protocol, settings)
    except TlsConfigError as exc:
        raise ConfigError(exc.key, exc.reason) from None


class NodeTls:
    """The server contexts of a node's TLS listeners and the client security it uses to
    reach other nodes' listeners; every file is read here, so a bad one stops start-up."""

    def __init__(self, originals: Mapping[str, str], protocol_map: Mapping[str, str],
                 tls_listeners: list[str], client_listeners: list[str]) -> None:
        self._server: dict[str, ssl.SSLContext] = {}
        self._client: dict[str, ClientSecurity] = {}
        for name in tls_listeners:
            self._server[name] = self._build(originals, name, server_side=True)
        for name in client_listeners:
            protocol = protocol_map.get(name, "PLAINTEXT")
            if name in self._client:
                continue
            try:
                settings = (listener_tls_settings(originals, name)
                            if protocol in ("SSL", "SASL_SSL") else None)
                self._client[name] = ClientSecurity.from_tls_settings(protocol, settings)
            except TlsConfigError as exc:
                raise ConfigError(exc.key, exc.reason) from None

    @staticmethod
    def _build(originals: Mapping[str, str], name: str, *, server_side: bool
               ) -> ssl.SSLContext:
        settings = listener_tls_settings(originals, name)
        try:
            return build_context(settings, server_side=server_side)
        except TlsConfigError as exc:
            raise ConfigError(exc.key, f"{exc.reason} (listener {name})") from None

    def server_contexts(self) -> dict[str, ssl.SSLContext]:
        """Listener name -> server context, for each TLS listener."""
        return dict(self._server)

    def client_security(self, listener_name: str) -> ClientSecurity:
        """How this node connects to another node's `listener_name`."""
        return self._client.get(listener_name, ClientSecurity())
