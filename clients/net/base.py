"""What the trio and the blocking connection share: the peer's address, the protocol
session, the receive buffer, the closed state and the version queries built on them."""

from __future__ import annotations

from typing import Mapping

from clients.net.errors import FatalConnectionError, KafkaConnectionError
from clients.net.security import PLAINTEXT, ClientSecurity
from clients.net.session import FrameBuffer, OutgoingRequest, ProtocolSession

# Ask the socket for the rest of the frame, but at least a chunk (fewer syscalls for small
# frames) and at most a bounded read (a huge size prefix must not allocate it all at once).
_RECEIVE_CHUNK = 1 << 16
_RECEIVE_MAX = 1 << 20


class ConnectionBase:
    """State and I/O-free queries of one connection; subclasses move the bytes."""

    def __init__(self, host: str, port: int, client_id: str | None,
                 security: ClientSecurity = PLAINTEXT) -> None:
        self.host = host
        self.port = port
        self.security = security
        self._session = ProtocolSession(client_id)
        self._frames = FrameBuffer()
        self._closed_reason: str | None = None
        # The peer closed the connection (rather than the client, or a timeout).
        self._peer_closed = False
        # The first answer after ApiVersions is still to be checked for a SASL listener's
        # refusal (only when diagnosing a connection without SASL).
        self._unproven = False

    @property
    def closed(self) -> bool:
        return self._closed_reason is not None

    @property
    def broker_versions(self) -> Mapping[int, tuple[int, int]]:
        """The peer's (min, max) version per API key, from ApiVersions."""
        return self._session.broker_versions

    def supports(self, api_key: int) -> bool:
        """Whether this client and the peer share at least one version of ``api_key``."""
        return self._session.supports(api_key)

    def pick_version(self, api_key: int, version: int | None = None) -> int:
        """The version ``request`` would use; KafkaError(UNSUPPORTED_VERSION) if none."""
        return self._session.pick_version(api_key, version)

    def _closed_error(self) -> KafkaConnectionError:
        return KafkaConnectionError(
            f"connection to {self.host}:{self.port} is closed: {self._closed_reason}")

    def _check_open(self) -> None:
        if self._closed_reason is not None:
            raise self._closed_error()

    def _closed_before_answer(self, error: BaseException) -> bool:
        """Whether opening failed because a plaintext peer closed the connection before
        answering ApiVersions: what a TLS listener does (see ``mismatch``)."""
        return (isinstance(error, KafkaConnectionError)
                and not isinstance(error, FatalConnectionError)
                and self._peer_closed and not self._session.negotiated
                and not self.security.uses_tls)

    def _receive_size(self) -> int:
        return min(max(self._frames.bytes_wanted(), _RECEIVE_CHUNK), _RECEIVE_MAX)

    def _timeout_reason(self, outgoing: OutgoingRequest, timeout: float) -> str:
        return (f"{outgoing.api_key.name} request to {self.host}:{self.port} timed out "
                f"after {timeout:g} s")
