"""The `ssl.SSLContext` of a listener or a client from its `TlsSettings`: protocols, cipher
suites, the PEM keystore and truststore; every error names the configuration key."""

from __future__ import annotations

import ssl

from clients.net.tls import PROTOCOL_VERSIONS, TlsConfigError, TlsSettings

_NO_VERSION_OPTIONS = {
    "TLSv1": ssl.OP_NO_TLSv1, "TLSv1.1": ssl.OP_NO_TLSv1_1,
    "TLSv1.2": ssl.OP_NO_TLSv1_2, "TLSv1.3": ssl.OP_NO_TLSv1_3,
}
_PEM_MARKER = b"-----BEGIN "


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
