"""The client side of SASL: PLAIN and SCRAM-SHA-256/512 (through scramp) after ApiVersions,
with SaslHandshake v1 and SaslAuthenticate, as Kafka's own clients do.

`sasl_steps` is I/O-free: a generator that yields each request to send and receives each
response frame, so the trio and the blocking connections drive the same exchange.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generator, Mapping

import scramp

from clients.net import mismatch
from clients.net.errors import AuthenticationFailedError
from clients.net.jaas import JaasConfigError, parse_jaas
from clients.net.session import OutgoingRequest, ProtocolSession
from clients.protocol import ApiKey, ErrorCode

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class SaslCredentials:
    """Mechanism, user name and password a client authenticates with."""

    mechanism: str
    username: str
    password: str

    def __repr__(self) -> str:
        return f"SaslCredentials(mechanism={self.mechanism!r}, username={self.username!r})"


def sasl_credentials(config: Mapping[str, object]) -> SaslCredentials | None:
    """Credentials from Kafka's client keys (`security.protocol`, `sasl.mechanism`,
    `sasl.username`/`sasl.password` or `sasl.jaas.config`); None unless the protocol is
    SASL_*. ValueError names the key that is missing or wrong."""
    protocol = str(config.get("security.protocol") or "PLAINTEXT").upper()
    if protocol not in SASL_PROTOCOLS:
        return None
    mechanism = str(config.get("sasl.mechanism") or "GSSAPI").strip().upper()
    if mechanism not in MECHANISMS:
        raise ValueError(f"sasl.mechanism {mechanism} is not supported (use "
                         f"{', '.join(MECHANISMS)})")
    username, password = config.get("sasl.username"), config.get("sasl.password")
    jaas = config.get("sasl.jaas.config")
    if username is None and jaas:
        try:
            options = parse_jaas(str(jaas)).options
        except JaasConfigError as exc:
            raise ValueError(f"sasl.jaas.config: {exc}") from None
        username, password = options.get("username"), options.get("password")
    if not username:
        raise ValueError(f"sasl.username (or sasl.jaas.config's username) is required with "
                         f"security.protocol {protocol}")
    if password is None:
        raise ValueError("sasl.password (or sasl.jaas.config's password) is required with "
                         f"security.protocol {protocol}")
    return SaslCredentials(mechanism, str(username), str(password))


class _Plain:
    def __init__(self, credentials: SaslCredentials) -> None:
        self._credentials = credentials

    def first(self) -> bytes:
        c = self._credentials
        return b"\0" + c.username.encode() + b"\0" + c.password.encode()

    def next(self, server_token: bytes) -> bytes | None:
        return None


class _ScramAnswerError(Exception):
    """The broker's SCRAM message could not be verified or parsed."""


class _Scram:
    def __init__(self, credentials: SaslCredentials) -> None:
        self._client = scramp.ScramClient([credentials.mechanism], credentials.username,
                                          credentials.password)
        self._stage = 0

    def first(self) -> bytes:
        return self._client.get_client_first().encode()

    def next(self, server_token: bytes) -> bytes | None:
        try:
            if self._stage == 0:
                self._stage = 1
                self._client.set_server_first(server_token.decode())
                return self._client.get_client_final().encode()
            self._client.set_server_final(server_token.decode())
        except (scramp.ScramException, UnicodeDecodeError) as exc:
            raise _ScramAnswerError(f"the broker's SCRAM answer is not valid: {exc}") from None
        return None


def sasl_steps(session: ProtocolSession, credentials: SaslCredentials, host: str, port: int,
               protocol: str = "SASL_PLAINTEXT") -> Generator[OutgoingRequest, bytes, None]:
    """SaslHandshake then SaslAuthenticate until the mechanism completes, with the broker
    at ``host:port`` (named in errors). Raises AuthenticationFailedError with the broker's
    message when it refuses the mechanism or the credentials, and
    SecurityProtocolMismatchError when it refuses SaslHandshake itself (a listener without
    SASL); both are fatal: retrying cannot help."""
    handshake = session.build_request(ApiKey.SASL_HANDSHAKE,
                                      {"mechanism": credentials.mechanism}, 1)
    body = session.parse_response(handshake, (yield handshake))
    code = body["error_code"]
    if code == ErrorCode.ILLEGAL_SASL_STATE:
        raise mismatch.sasl_client_on_listener_without_sasl(host, port, protocol)
    if code:
        offered = ", ".join(body.get("mechanisms") or []) or "none"
        raise AuthenticationFailedError(
            code, f"authentication failed at {host}:{port}: SASL mechanism "
                  f"{credentials.mechanism} is not enabled there (it offers {offered})")
    exchange = _Plain(credentials) if credentials.mechanism == "PLAIN" else _Scram(credentials)
    who = f"{host}:{port} ({credentials.mechanism} as {credentials.username})"
    token: bytes | None = exchange.first()
    while token is not None:
        request = session.build_request(ApiKey.SASL_AUTHENTICATE, {"auth_bytes": token})
        body = session.parse_response(request, (yield request))
        if body["error_code"]:
            raise AuthenticationFailedError(
                body["error_code"], f"authentication failed at {who}: "
                                    f"{body.get('error_message') or 'no reason given'}")
        try:
            token = exchange.next(bytes(body.get("auth_bytes") or b""))
        except _ScramAnswerError as exc:
            raise AuthenticationFailedError(ErrorCode.SASL_AUTHENTICATION_FAILED,
                                            f"authentication failed at {who}: {exc}") from None
