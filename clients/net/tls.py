"""TLS settings by Kafka's `ssl.*` names and the `ssl.SSLContext` they make.

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
_NO_VERSION_OPTIONS = {
    "TLSv1": ssl.OP_NO_TLSv1, "TLSv1.1": ssl.OP_NO_TLSv1_1,
    "TLSv1.2": ssl.OP_NO_TLSv1_2, "TLSv1.3": ssl.OP_NO_TLSv1_3,
}
CLIENT_AUTH_MODES = ("none", "requested", "required")
# The store types Kafka knows; only PEM files are read here.
STORE_TYPES = ("JKS", "PKCS12", "PEM")
_PEM_MARKER = b"-----BEGIN "

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


def build_context(settings: TlsSettings, *, server_side: bool) -> ssl.SSLContext:
    """The SSLContext for a listener (`server_side`) or a client; reads the files now, so a
    missing or bad file raises TlsConfigError naming its key."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server_side
                             else ssl.PROTOCOL_TLS_CLIENT)
    _apply_protocols(context, settings)
    _apply_cipher_suites(context, settings)
    _load_keystore(context, settings)
    _load_truststore(context, settings)
    if server_side:
        if settings.keystore_location is None:
            raise TlsConfigError(settings.key("ssl.keystore.location"),
                                 "is required on an SSL listener (PEM certificate and key)")
        context.verify_mode = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
                               "required": ssl.CERT_REQUIRED}[settings.client_auth]
    else:
        context.check_hostname = settings.endpoint_identification
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def _apply_protocols(context: ssl.SSLContext, settings: TlsSettings) -> None:
    order = list(PROTOCOL_VERSIONS)
    enabled = sorted(set(settings.enabled_protocols), key=order.index)
    try:
        context.minimum_version = PROTOCOL_VERSIONS[enabled[0]]
        context.maximum_version = PROTOCOL_VERSIONS[enabled[-1]]
    except ValueError as exc:
        raise TlsConfigError(settings.key("ssl.enabled.protocols"), str(exc)) from None
    # A gap inside the range (TLSv1.1 and TLSv1.3 only) is closed by option flags.
    for name in order[order.index(enabled[0]):order.index(enabled[-1]) + 1]:
        if name not in enabled:
            context.options |= _NO_VERSION_OPTIONS[name]


_TLS13_SUITES = ("TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256",
                 "TLS_AES_128_GCM_SHA256", "TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256")


def openssl_cipher_name(name: str) -> str:
    """OpenSSL's name of a TLS 1.2 suite given by its IANA name (as Kafka's
    ssl.cipher.suites lists them, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256); OpenSSL
    names pass through."""
    if not name.startswith("TLS_") or "_WITH_" not in name:
        return name
    exchange, _, rest = name[4:].partition("_WITH_")
    prefix = "" if exchange == "RSA" else exchange.replace("_", "-") + "-"
    parts = rest.split("_")
    if parts[0] in ("AES", "CAMELLIA", "ARIA") and len(parts) > 1:
        parts = [parts[0] + parts[1]] + parts[2:]
    if "CBC" in parts:
        parts.remove("CBC")
    if parts[-1] == "SHA256" and "POLY1305" in parts:
        parts = parts[:-1]
    return prefix + "-".join(parts)


def _apply_cipher_suites(context: ssl.SSLContext, settings: TlsSettings) -> None:
    suites = settings.cipher_suites
    if not suites:
        return
    key = settings.key("ssl.cipher.suites")
    tls13 = [s for s in suites if s in _TLS13_SUITES]
    older = [openssl_cipher_name(s) for s in suites if s not in _TLS13_SUITES]
    if older:
        for name in older:
            try:
                ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).set_ciphers(name)
            except ssl.SSLError:
                raise TlsConfigError(key, f"unknown cipher suite {name!r}") from None
        context.set_ciphers(":".join(older))
    tls13_enabled = "TLSv1.3" in settings.enabled_protocols
    if not tls13_enabled:
        return
    if not tls13:
        # No TLS 1.3 suite listed: TLS 1.3 cannot be negotiated, as in Kafka.
        if not older:
            raise TlsConfigError(key, "names no usable cipher suite")
        context.maximum_version = ssl.TLSVersion.TLSv1_2
        return
    available = {c["name"] for c in context.get_ciphers() if c["protocol"] == "TLSv1.3"}
    if set(tls13) != available:
        # Python's ssl cannot choose among TLS 1.3 suites: refuse rather than enable more
        # than was asked for.
        raise TlsConfigError(key, f"TLS 1.3 suites can only be enabled all together "
                             f"({', '.join(sorted(available))}); list them all, or none and "
                             f"leave TLSv1.3 out of ssl.enabled.protocols")


def _is_pem(path: str) -> bool:
    with open(path, "rb") as handle:
        return _PEM_MARKER in handle.read(1 << 16)


def _check_pem(settings: TlsSettings, location_key: str, type_key: str,
               password_key: str, store_type: str | None, password: str | None,
               path: str) -> None:
    location = settings.key(location_key)
    if store_type is not None and store_type != "PEM":
        raise TlsConfigError(settings.key(type_key), f"{store_type} stores are not supported; "
                             f"convert {path} to PEM and set {type_key}=PEM")
    try:
        pem = _is_pem(path)
    except OSError as exc:
        raise TlsConfigError(location, f"cannot read {path}: {exc.strerror or exc}") from None
    if not pem:
        raise TlsConfigError(location, f"{path} is not a PEM file (JKS and PKCS12 stores are "
                             f"not supported; convert it to PEM)")
    if password is not None:
        raise TlsConfigError(settings.key(password_key), "cannot be used with a PEM store "
                             "(only ssl.key.password, for an encrypted private key)")


def _load_keystore(context: ssl.SSLContext, settings: TlsSettings) -> None:
    path = settings.keystore_location
    if path is None:
        return
    _check_pem(settings, "ssl.keystore.location", "ssl.keystore.type", "ssl.keystore.password",
               settings.keystore_type, settings.keystore_password, path)
    # A callable even without a password: OpenSSL would otherwise prompt on the terminal
    # for an encrypted key.
    password = settings.key_password or ""
    try:
        context.load_cert_chain(path, password=lambda: password)
    except ssl.SSLError as exc:
        encrypted = _is_encrypted_key(path)
        key = "ssl.key.password" if encrypted else "ssl.keystore.location"
        reason = ("is wrong for the encrypted private key in" if encrypted and password
                  else "is required: the private key is encrypted in" if encrypted
                  else "cannot load the certificate and private key from")
        raise TlsConfigError(settings.key(key), f"{reason} {path} ({exc.reason or exc})"
                             ) from None
    except OSError as exc:
        raise TlsConfigError(settings.key("ssl.keystore.location"),
                             f"cannot read {path}: {exc.strerror or exc}") from None


def _is_encrypted_key(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            text = handle.read()
    except OSError:
        return False
    return b"ENCRYPTED PRIVATE KEY" in text or b"Proc-Type: 4,ENCRYPTED" in text


def _load_truststore(context: ssl.SSLContext, settings: TlsSettings) -> None:
    path = settings.truststore_location
    if settings.truststore_certificates is not None:
        # Kafka's inline PEM truststore (ssl.truststore.certificates).
        try:
            context.load_verify_locations(cadata=settings.truststore_certificates)
        except (ssl.SSLError, ValueError) as exc:
            raise TlsConfigError(settings.key("ssl.truststore.certificates"),
                                 f"cannot load the CA certificates: {exc}") from None
    if path is None:
        if settings.truststore_certificates is not None:
            return
        # As Kafka falls back to the JVM's trust store: the system's CAs.
        context.load_default_certs(ssl.Purpose.SERVER_AUTH if context.protocol
                                   == ssl.PROTOCOL_TLS_CLIENT else ssl.Purpose.CLIENT_AUTH)
        return
    _check_pem(settings, "ssl.truststore.location", "ssl.truststore.type",
               "ssl.truststore.password", settings.truststore_type,
               settings.truststore_password, path)
    try:
        context.load_verify_locations(cafile=path)
    except (ssl.SSLError, OSError) as exc:
        raise TlsConfigError(settings.key("ssl.truststore.location"),
                             f"cannot load CA certificates from {path}: {exc}") from None
