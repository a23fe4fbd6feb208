"""TLS settings by Kafka's `ssl.*` names (`tls_context` makes the `ssl.SSLContext`).

Shared by the clients and the broker (its listeners and its own client connections). Only
PEM files are read (Kafka's `ssl.keystore.type=PEM`): a keystore file holding the
certificate chain and the private key, a truststore file holding CA certificates. Every
error names the configuration key at fault.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

PROTOCOL_VERSIONS: dict[str, ssl.TLSVersion] = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}
CLIENT_AUTH_MODES = ("none", "requested", "required")
# The store types Kafka knows; only PEM files are read here.
STORE_TYPES = ("JKS", "PKCS12", "PEM")

# The keys this module reads, with Kafka's defaults (None = unset). The keystore and
# truststore types default to unset: a PEM file is then recognised by its content.
SSL_DEFAULTS: dict[str, str | None] = {
    "ssl.keystore.location": None,
    "ssl.keystore.type": None,
    "ssl.keystore.password": None,
    "ssl.key.password": None,
    "ssl.truststore.location": None,
    "ssl.truststore.type": None,
    "ssl.truststore.password": None,
    "ssl.truststore.certificates": None,
    "ssl.keystore.key": None,
    "ssl.keystore.certificate.chain": None,
    "ssl.client.auth": "none",
    "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
    "ssl.protocol": "TLSv1.3",
    "ssl.cipher.suites": "",
    "ssl.endpoint.identification.algorithm": "https",
}
SENSITIVE_KEYS = frozenset({"ssl.keystore.password", "ssl.key.password",
                            "ssl.truststore.password", "ssl.keystore.key"})
# Kafka's inline PEM keystore: Python's ssl loads a certificate and key from files only.
_INLINE_KEYSTORE_KEYS = ("ssl.keystore.key", "ssl.keystore.certificate.chain")


class TlsConfigError(ValueError):
    """A bad TLS setting or file; `key` is the configuration key at fault."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(item.strip() for item in (value or "").split(",") if item.strip())


@dataclass(frozen=True)
class TlsSettings:
    """The `ssl.*` values of one listener or client; `key_names` maps each base key to the
    key it was read from (e.g. `listener.name.internal.ssl.keystore.location`), so errors
    name what the user wrote."""

    keystore_location: str | None = None
    keystore_type: str | None = None
    keystore_password: str | None = None
    key_password: str | None = None
    truststore_location: str | None = None
    truststore_type: str | None = None
    truststore_password: str | None = None
    truststore_certificates: str | None = None
    client_auth: str = "none"
    enabled_protocols: tuple[str, ...] = ("TLSv1.2", "TLSv1.3")
    protocol: str = "TLSv1.3"
    cipher_suites: tuple[str, ...] = ()
    endpoint_identification: bool = True
    key_names: Mapping[str, str] = field(default_factory=dict, compare=False)

    @classmethod
    def from_values(cls, lookup: Callable[[str], tuple[str, str | None]]) -> TlsSettings:
        """Build from `lookup(base_key) -> (key read, raw value or None)`; validates the
        values that need no file."""
        names: dict[str, str] = {}
        raw: dict[str, str | None] = {}
        for base in SSL_DEFAULTS:
            name, value = lookup(base)
            names[base] = name
            value = None if value is None else str(value).strip()
            raw[base] = SSL_DEFAULTS[base] if value is None else value
        for base in ("ssl.keystore.location", "ssl.truststore.location", "ssl.keystore.type",
                     "ssl.truststore.type"):
            if raw[base] == "":
                raw[base] = None
        for base in _INLINE_KEYSTORE_KEYS:
            if raw[base]:
                raise TlsConfigError(names[base], "is not supported: put the certificate "
                                     "chain and the private key in the PEM file named by "
                                     "ssl.keystore.location")
        client_auth = (raw["ssl.client.auth"] or "none").lower()
        if client_auth not in CLIENT_AUTH_MODES:
            raise TlsConfigError(names["ssl.client.auth"], f"{client_auth!r} is not one of "
                                 f"{', '.join(CLIENT_AUTH_MODES)}")
        protocols = _split(raw["ssl.enabled.protocols"])
        for protocol in protocols:
            if protocol not in PROTOCOL_VERSIONS:
                raise TlsConfigError(names["ssl.enabled.protocols"], f"unknown protocol "
                                     f"{protocol!r}; use {', '.join(PROTOCOL_VERSIONS)}")
        if not protocols:
            raise TlsConfigError(names["ssl.enabled.protocols"], "names no protocol")
        protocol = raw["ssl.protocol"] or "TLSv1.3"
        if protocol not in ("TLS", "TLSv1.2", "TLSv1.3", *PROTOCOL_VERSIONS):
            raise TlsConfigError(names["ssl.protocol"], f"unknown protocol {protocol!r}")
        algorithm = (raw["ssl.endpoint.identification.algorithm"] or "").lower()
        if algorithm not in ("https", ""):
            raise TlsConfigError(names["ssl.endpoint.identification.algorithm"],
                                 f"{algorithm!r} is not supported: use https or an empty "
                                 f"value (no hostname verification)")
        for base in ("ssl.keystore.type", "ssl.truststore.type"):
            value = raw[base]
            if value is not None and value.upper() not in STORE_TYPES:
                raise TlsConfigError(names[base], f"{value!r} is not one of "
                                     f"{', '.join(STORE_TYPES)}")
        return cls(
            keystore_location=raw["ssl.keystore.location"],
            keystore_type=None if raw["ssl.keystore.type"] is None
            else raw["ssl.keystore.type"].upper(),  # type: ignore[union-attr]
            keystore_password=raw["ssl.keystore.password"] or None,
            key_password=raw["ssl.key.password"] or None,
            truststore_location=raw["ssl.truststore.location"],
            truststore_type=None if raw["ssl.truststore.type"] is None
            else raw["ssl.truststore.type"].upper(),  # type: ignore[union-attr]
            truststore_password=raw["ssl.truststore.password"] or None,
            truststore_certificates=raw["ssl.truststore.certificates"] or None,
            client_auth=client_auth,
            enabled_protocols=protocols,
            protocol=protocol,
            cipher_suites=_split(raw["ssl.cipher.suites"]),
            endpoint_identification=algorithm == "https",
            key_names=names,
        )

    @classmethod
    def from_mapping(cls, config: Mapping[str, Any]) -> TlsSettings:
        """From a flat mapping of Kafka keys (a client's configuration)."""
        def lookup(base: str) -> tuple[str, str | None]:
            value = config.get(base)
            return base, None if value is None else str(value)
        return cls.from_values(lookup)

    def key(self, base: str) -> str:
        return self.key_names.get(base, base)
