"""The SASL state of one connection (Kafka's SaslServerAuthenticator), free of I/O.

A connection on a SASL listener starts unauthenticated: it may send ApiVersions and
SaslHandshake, then SaslAuthenticate requests (handshake v1) or bare length-prefixed tokens
(handshake v0, the form older clients use) until the mechanism completes. Anything else, or
a failed step, is answered (where the form allows) and the connection closes. Once
authenticated, `connections.max.reauth.ms` bounds the session (KIP-368): a request after
expiry closes the connection unless it starts a re-authentication with the same mechanism
and principal.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable, Mapping

from broker.sasl.mechanisms import (
    CredentialLookup,
    SaslAuthenticationError,
    SaslExchange,
    new_exchange,
)

API_VERSIONS = 18
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36
NONE = 0
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
SASL_AUTHENTICATION_FAILED = 58


class State(enum.Enum):
    HANDSHAKE = "awaiting SaslHandshake"
    AUTHENTICATE = "awaiting SaslAuthenticate"
    RAW_TOKEN = "awaiting a SASL token"
    AUTHENTICATED = "authenticated"
    FAILED = "failed"


@dataclass(frozen=True)
class ListenerSasl:
    """What a SASL listener accepts: its mechanisms, PLAIN's users, the session bound."""

    mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str]
    max_reauth_ms: int  # 0: sessions never expire

    def __repr__(self) -> str:
        return (f"ListenerSasl(mechanisms={self.mechanisms}, "
                f"plain_users={sorted(self.plain_users)}, max_reauth_ms={self.max_reauth_ms})")


@dataclass(frozen=True)
class Step:
    """The answer to one SASL request: error code and message, the server token, the
    session lifetime (SaslAuthenticate v1+), and whether the connection must then close."""

    error_code: int = NONE
    error_message: str | None = None
    token: bytes = b""
    session_lifetime_ms: int = 0
    close: bool = False


class SaslSession:
    """One connection's SASL progress. `now_ms` is a monotonic millisecond clock."""

    def __init__(self, settings: ListenerSasl, credentials: CredentialLookup,
                 now_ms: Callable[[], float]) -> None:
        self._settings = settings
        self._credentials = credentials
        self._now_ms = now_ms
        self.state = State.HANDSHAKE
        self.mechanism: str | None = None
        self.principal_name: str | None = None
        self._exchange: SaslExchange | None = None
        self._expires_at_ms: float | None = None
        self._reauthenticating = False
        # Set when a request arrived after the session expired.
        self.expired = False

    @property
    def enabled_mechanisms(self) -> tuple[str, ...]:
        return self._settings.mechanisms

    @property
    def authenticated(self) -> bool:
        return self.state is State.AUTHENTICATED and not self._reauthenticating

    @property
    def serial(self) -> bool:
        """Requests must be handled one at a time (every state before authentication)."""
        return self.state is not State.AUTHENTICATED

    @property
    def expects_raw_token(self) -> bool:
        return self.state is State.RAW_TOKEN

    def admit(self, api_key: int) -> str | None:
        """None when a request with `api_key` may proceed now; else why the connection closes."""
        if self.state is State.FAILED:
            return "SASL authentication failed earlier on this connection"
        if self.state is State.AUTHENTICATED:
            if self._reauthenticating:
                if api_key in (SASL_HANDSHAKE, SASL_AUTHENTICATE):
                    return None
                return "a request interrupted SASL re-authentication"
            if api_key == SASL_HANDSHAKE:
                return None
            if self._expired():
                # Kafka closes such a connection without answering the request.
                self.expired = True
                return "the SASL session expired (connections.max.reauth.ms) without " \
                       "re-authentication"
            return None
        if api_key == API_VERSIONS:
            return None
        if self.state is State.HANDSHAKE and api_key == SASL_HANDSHAKE:
            return None
        if self.state is State.AUTHENTICATE and api_key == SASL_AUTHENTICATE:
            return None
        self.state = State.FAILED
        return f"unexpected request (api key {api_key}) while {self._describe_state()}"

    def _describe_state(self) -> str:
        return "awaiting SaslHandshake" if self.state is State.FAILED else self.state.value

    def _expired(self) -> bool:
        return self._expires_at_ms is not None and self._now_ms() >= self._expires_at_ms

    def handshake(self, mechanism: str, version: int) -> Step:
        """SaslHandshake: choose the mechanism; v0 switches to bare tokens."""
        reauth = self.state is State.AUTHENTICATED
        if self.state not in (State.HANDSHAKE, State.AUTHENTICATED) or self._reauthenticating:
            self.state = State.FAILED
            return Step(ILLEGAL_SASL_STATE, "SaslHandshake is not expected now", close=True)
        if mechanism not in self._settings.mechanisms:
            self.state = State.FAILED
            return Step(UNSUPPORTED_SASL_MECHANISM,
                        f"Unsupported SASL mechanism {mechanism}", close=True)
        if reauth:
            if version == 0:
                self.state = State.FAILED
                return Step(ILLEGAL_SASL_STATE, "re-authentication needs SaslHandshake v1",
                            close=True)
            if mechanism != self.mechanism:
                self.state = State.FAILED
                return Step(ILLEGAL_SASL_STATE,
                            f"re-authentication must use {self.mechanism}, not {mechanism}",
                            close=True)
            self._reauthenticating = True
        else:
            self.mechanism = mechanism
            self.state = State.RAW_TOKEN if version == 0 else State.AUTHENTICATE
        self._exchange = new_exchange(mechanism, self._settings.plain_users,
                                      self._credentials)
        return Step()

    def authenticate(self, token: bytes) -> Step:
        """SaslAuthenticate: one step of the mechanism."""
        if self._exchange is None or not (self.state is State.AUTHENTICATE
                                          or self._reauthenticating):
            self.state = State.FAILED
            return Step(ILLEGAL_SASL_STATE, "SaslAuthenticate is not expected now", close=True)
        try:
            reply = self._exchange.evaluate(token)
        except SaslAuthenticationError as exc:
            self.state = State.FAILED
            self._exchange = None
            return Step(SASL_AUTHENTICATION_FAILED, str(exc), close=True)
        if not self._exchange.complete:
            return Step(token=reply)
        return self._complete(reply)

    def raw_token(self, token: bytes) -> bytes:
        """A bare token after SaslHandshake v0; the reply token, or SaslAuthenticationError
        (the bare form has no way to carry an error, so the connection just closes)."""
        if self.state is not State.RAW_TOKEN or self._exchange is None:
            raise SaslAuthenticationError("no SASL token is expected now")
        try:
            reply = self._exchange.evaluate(token)
        except SaslAuthenticationError:
            self.state = State.FAILED
            self._exchange = None
            raise
        if self._exchange.complete:
            self._complete(reply)
        return reply

    def _complete(self, reply: bytes) -> Step:
        assert self._exchange is not None
        name = self._exchange.authorization_id
        self._exchange = None
        if self._reauthenticating and name != self.principal_name:
            self.state = State.FAILED
            return Step(SASL_AUTHENTICATION_FAILED,
                        "Cannot change principals during re-authentication", close=True)
        self._reauthenticating = False
        self.principal_name = name
        self.state = State.AUTHENTICATED
        lifetime = self._settings.max_reauth_ms
        self._expires_at_ms = self._now_ms() + lifetime if lifetime > 0 else None
        return Step(token=reply, session_lifetime_ms=lifetime)
