"""`BlockingKafkaConnection`: the same request API over a plain blocking socket.

For CLI tools, test code and the blocking producer: no threads, no event loop. ``request``
sends one request and waits for its answer; ``send`` and ``receive`` let a caller keep
several requests in flight.
"""

from __future__ import annotations

import logging
import socket
import ssl
import time
from collections import deque
from contextlib import contextmanager
from typing import Any, Iterator

from clients.net import probes
from clients.net.base import ConnectionBase
from clients.net.errors import KafkaConnectionError, TlsHandshakeClosedError
from clients.net.mismatch import refused_before_authentication
from clients.net.sasl import SaslCredentials, sasl_steps
from clients.net.security import PLAINTEXT, ClientSecurity, open_blocking_socket
from clients.net.session import OutgoingRequest
from clients.protocol import ProtocolError

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 30.0


def recv_by(sock: socket.socket, size: int, deadline: float) -> bytes:
    """One `recv` of up to `size` bytes that gives up at `deadline` (a time.monotonic()
    value), raising TimeoutError. A socket timeout bounds each recv only, so a peer trickling
    bytes could otherwise stretch one response far past any timeout."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("no complete response in time")
    sock.settimeout(remaining)
    return sock.recv(size)


class BlockingKafkaConnection(ConnectionBase):
    """A negotiated blocking connection; ``timeout`` bounds the connect and each request.
    ``diagnose`` names a security protocol mismatch, as ``KafkaConnection.connect`` does.

    Raises KafkaConnectionError if the endpoint cannot be reached or does not answer
    ApiVersions in time (FatalConnectionError when retrying cannot help), ProtocolError
    for an undecodable answer, KafkaError for an ApiVersions error.
    """

    def __init__(self, host: str, port: int, client_id: str | None = "raftka",
                 timeout: float = DEFAULT_TIMEOUT_S,
                 security: ClientSecurity = PLAINTEXT,
                 sasl: SaslCredentials | None = None, diagnose: bool = False) -> None:
        super().__init__(host, port, client_id, security)
        self.timeout = timeout
        # Requests from ``send`` still awaiting an answer, oldest first, and answers read
        # ahead of the one a caller waited for, by correlation id.
        self._unanswered: deque[OutgoingRequest] = deque()
        self._answers: dict[int, bytes] = {}
        try:
            self._sock = open_blocking_socket(host, port, security, timeout)
        except TlsHandshakeClosedError:
            if diagnose and (error := probes.explain_handshake_closed_blocking(
                    host, port, security, timeout)) is not None:
                raise error from None
            raise
        try:
            self._open(sasl)
        except BaseException as exc:
            self.close()
            if diagnose and self._closed_before_answer(exc) and (
                    error := probes.explain_closed_blocking(
                        host, port, security, self._frames.peek(), timeout)) is not None:
                raise error from None
            raise
        self._unproven = diagnose and sasl is None
        logger.debug("connected to %s:%d", host, port)

    def _open(self, sasl: SaslCredentials | None) -> None:
        """ApiVersions, then SASL authentication when ``sasl`` is given."""
        request = self._session.api_versions_request()
        frame = self._exchange(request)
        self._session.apply_api_versions(request, frame)
        if sasl is not None:
            steps = sasl_steps(self._session, sasl, self.host, self.port,
                               self.security.protocol)
            outgoing = next(steps)
            while True:
                frame = self._exchange(outgoing)
                try:
                    outgoing = steps.send(frame)
                except StopIteration:
                    break

    def request(self, api_key: int, body: dict[str, Any],
                version: int | None = None) -> dict[str, Any]:
        """Send one request and return the decoded response body (see KafkaConnection)."""
        self._check_open()
        outgoing = self._session.build_request(api_key, body, version)
        frame = self._exchange(outgoing)
        if frame is None:
            return {}
        return self._parse(outgoing, frame)

    def _parse(self, outgoing: OutgoingRequest, frame: bytes) -> dict[str, Any]:
        try:
            body = self._session.parse_response(outgoing, frame)
        except ProtocolError:
            self._mark_closed("undecodable response")
            raise
        if self._unproven:
            self._check_first_answer(outgoing.api_key, body)
        return body

    def _check_first_answer(self, api_key: int, body: dict[str, Any]) -> None:
        """See KafkaConnection._check_first_answer."""
        self._unproven = False
        if not refused_before_authentication(api_key, body):
            return
        error = probes.explain_refusal_blocking(self.host, self.port, self.security,
                                                self.timeout)
        if error is not None:
            self._mark_closed(str(error))
            raise error

    def send(self, api_key: int, body: dict[str, Any],
             version: int | None = None) -> OutgoingRequest:
        """Send one request without waiting for its answer; ``receive`` collects it.
        Requests may pile up (a pipeline); the broker answers them in order."""
        self._check_open()
        outgoing = self._session.build_request(api_key, body, version)
        with self._failures(outgoing):
            self._sock.settimeout(self.timeout)
            self._sock.sendall(outgoing.data)
            if outgoing.expects_response:
                self._unanswered.append(outgoing)
        return outgoing

    def receive(self, outgoing: OutgoingRequest, wait: bool = True) -> dict[str, Any] | None:
        """The answer to a request from ``send`` ({} when none is expected). With ``wait``
        False only bytes already here are read, and None means "not complete yet";
        otherwise it waits up to the connection's timeout. Raises as ``request``."""
        if not outgoing.expects_response:
            return {}
        frame = self._answers.pop(outgoing.correlation_id, None)
        if frame is None:
            self._check_open()
            deadline = time.monotonic() + self.timeout if wait else None
            with self._failures(outgoing):
                frame = self._frame_for(outgoing, deadline)
            if frame is None:
                return None
        return self._parse(outgoing, frame)

    def close(self) -> None:
        self._mark_closed("connection closed by the client")

    def __enter__(self) -> BlockingKafkaConnection:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _mark_closed(self, reason: str) -> None:
        if self._closed_reason is None:
            self._closed_reason = reason
            logger.debug("closing %s:%d: %s", self.host, self.port, reason)
        self._sock.close()

    def _exchange(self, outgoing: OutgoingRequest) -> bytes | None:
        # One deadline for the whole request: sending, then every recv of the response.
        deadline = time.monotonic() + self.timeout
        with self._failures(outgoing):
            self._sock.settimeout(self.timeout)
            self._sock.sendall(outgoing.data)
            if not outgoing.expects_response:
                return None
            return self._frame_for(outgoing, deadline)
        return None  # not reached: _failures raises

    def _frame_for(self, outgoing: OutgoingRequest, deadline: float | None) -> bytes | None:
        """Read until the frame answering ``outgoing`` is complete; answers to earlier
        pipelined requests (they come first) are kept for ``receive``. Without a
        ``deadline``, only reads what has already arrived: None when that is not enough."""
        while True:
            frame = self._frames.next_frame()
            if frame is None:
                if deadline is not None:
                    data = recv_by(self._sock, self._receive_size(), deadline)
                else:
                    self._sock.settimeout(0.0)
                    try:
                        data = self._sock.recv(self._receive_size())
                    except (BlockingIOError, ssl.SSLWantReadError):
                        return None
                if not data:
                    self._peer_closed = True
                    raise KafkaConnectionError(f"{self.host}:{self.port} closed the connection")
                self._frames.feed(data)
                continue
            owner = self._unanswered.popleft() if self._unanswered else outgoing
            if owner is outgoing:
                return frame
            self._answers[owner.correlation_id] = frame

    @contextmanager
    def _failures(self, outgoing: OutgoingRequest) -> Iterator[None]:
        """Close the connection on any failure of the exchange, raising the error the
        request API promises."""
        try:
            yield
        except TimeoutError:
            reason = self._timeout_reason(outgoing, self.timeout)
            self._mark_closed(reason)
            raise KafkaConnectionError(reason) from None
        except KafkaConnectionError as exc:
            self._mark_closed(str(exc))
            raise
        except ProtocolError:
            self._mark_closed("malformed response frame")
            raise
        except OSError as exc:
            self._peer_closed = isinstance(exc, ConnectionResetError)
            reason = f"connection to {self.host}:{self.port} failed: {exc}"
            self._mark_closed(reason)
            raise KafkaConnectionError(reason) from None
