"""Server sides of the SASL mechanisms: PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802,
RFC 7677, through scramp). Pure: each exchange consumes client tokens and returns the
server's, raising `SaslAuthenticationError` with Kafka's client-facing message on failure."""

from __future__ import annotations

from typing import Callable, Mapping, Protocol

import hmac

import scramp

from metadata.scram import MECHANISM_IDS, ScramCredential

PLAIN = "PLAIN"
SCRAM_MECHANISMS = tuple(MECHANISM_IDS)
SUPPORTED_MECHANISMS = (PLAIN, *SCRAM_MECHANISMS)

# Kafka never tells a client whether the user or the password was wrong.
INVALID_CREDENTIALS = "Authentication failed: Invalid username or password"

CredentialLookup = Callable[[str, str], ScramCredential | None]
"""(user name, mechanism name) -> the stored credential, or None."""


class SaslAuthenticationError(Exception):
    """Authentication failed; the message is what the client may be told."""


class SaslExchange(Protocol):
    """One mechanism's server side for one authentication."""

    @property
    def complete(self) -> bool: ...

    @property
    def authorization_id(self) -> str: ...

    def evaluate(self, token: bytes) -> bytes: ...


class PlainExchange:
    """PLAIN: one token `authzid NUL authcid NUL password`, checked against the JAAS users."""

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.complete = False
        self.authorization_id = ""

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslAuthenticationError("PLAIN authentication is already complete")
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise SaslAuthenticationError("Invalid SASL/PLAIN response: expected 3 tokens")
        try:
            authzid, username, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            raise SaslAuthenticationError("Invalid SASL/PLAIN response: not UTF-8") from None
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self._users.get(username)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslAuthenticationError(INVALID_CREDENTIALS)
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username")
        self.authorization_id = username
        self.complete = True
        return b""


class ScramExchange:
    """SCRAM: client-first, server-first, client-final, server-final (two round trips)."""

    def __init__(self, mechanism: str, credentials: CredentialLookup) -> None:
        self._mechanism = mechanism
        self._credentials = credentials
        self._user = ""
        self._server: scramp.ScramServer | None = None
        self._stage = 0
        self.complete = False
        self.authorization_id = ""

    def _auth_info(self, saslname: str) -> tuple[bytes, bytes, bytes, int]:
        # RFC 5802 escapes ',' and '=' in the name as =2C and =3D.
        username = saslname.replace("=2C", ",").replace("=3D", "=")
        credential = self._credentials(username, self._mechanism)
        if credential is None:
            raise SaslAuthenticationError(INVALID_CREDENTIALS)
        self._user = username
        return (credential.salt, credential.stored_key, credential.server_key,
                credential.iterations)

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslAuthenticationError("Invalid SCRAM message: not UTF-8") from None
        try:
            if self._stage == 0:
                self._server = scramp.ScramMechanism(self._mechanism).make_server(
                    self._auth_info)
                self._server.set_client_first(text)
                self._stage = 1
                return self._server.get_server_first().encode("utf-8")
            if self._stage == 1 and self._server is not None:
                self._stage = 2
                self._server.set_client_final(text)
                self.authorization_id = self._user
                self.complete = True
                return self._server.get_server_final().encode("utf-8")
        except SaslAuthenticationError:
            raise
        except scramp.ScramException as exc:
            if "proof" in str(exc).lower() or "invalid" in str(exc).lower():
                raise SaslAuthenticationError(INVALID_CREDENTIALS) from None
            raise SaslAuthenticationError(f"Invalid SCRAM message: {exc}") from None
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise SaslAuthenticationError(f"Invalid SCRAM message: {exc}") from None
        raise SaslAuthenticationError("Unexpected SCRAM message after authentication")


def new_exchange(mechanism: str, plain_users: Mapping[str, str],
                 credentials: CredentialLookup) -> SaslExchange:
    """The server side of `mechanism` (one of SUPPORTED_MECHANISMS)."""
    if mechanism == PLAIN:
        return PlainExchange(plain_users)
    return ScramExchange(mechanism, credentials)
