"""`KafkaConnection`: one trio connection to one Kafka-protocol endpoint.

Several tasks may share a connection. Requests are written under a send lock that also
appends the caller's slot to a FIFO of pending responses, so the FIFO matches the order on
the wire; Kafka answers in request order. Whichever waiting task holds the receive lock
reads the next frame and completes the slot at the head of the FIFO, so no background task
(and no nursery) is needed. Received bytes are buffered, so a reader cancelled mid-frame
loses nothing. As in Kafka's client, a timed-out request closes the connection.
"""

from __future__ import annotations

import functools
import logging
from collections import deque
from typing import Any, Awaitable, Callable

import trio

from clients.net import plain_socket, probes
from clients.net.base import ConnectionBase
from clients.net.errors import KafkaConnectionError, TlsHandshakeClosedError
from clients.net.mismatch import refused_before_authentication
from clients.net.sasl import SaslCredentials, sasl_steps
from clients.net.security import PLAINTEXT, ClientSecurity, open_transport
from clients.net.socket_buffers import OS_DEFAULT
from clients.net.session import OutgoingRequest
from clients.protocol import ProtocolError

logger = logging.getLogger(__name__)

DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_REQUEST_TIMEOUT_S = 30.0
# Frames from this size up are received straight into a buffer of their own.
_IN_PLACE_MIN = 1 << 16


async def _take(lock: trio.Lock) -> None:
    """Acquire ``lock``; uncontended without the scheduler round ``acquire`` costs, as the
    socket call that follows is a checkpoint when it has to wait."""
    if lock.locked():
        await lock.acquire()
    else:
        lock.acquire_nowait()


class _Pending:
    """A sent request waiting for its response."""

    __slots__ = ("request", "done", "result", "error")

    def __init__(self, request: OutgoingRequest) -> None:
        self.request = request
        self.done = False
        self.result: dict[str, Any] | None = None
        self.error: BaseException | None = None

    def complete(self, result: dict[str, Any] | None, error: BaseException | None) -> None:
        if not self.done:
            self.done, self.result, self.error = True, result, error


class KafkaConnection(ConnectionBase):
    """A negotiated connection; create it with ``await KafkaConnection.connect(...)``."""

    def __init__(self, stream: trio.abc.Stream, host: str, port: int,
                 client_id: str | None, sock: trio.socket.SocketType | None = None,
                 security: ClientSecurity = PLAINTEXT) -> None:
        super().__init__(host, port, client_id, security)
        self._stream = stream
        # Closed directly (no checkpoint) when the connection fails; under TLS it is the
        # transport's socket.
        self._socket: trio.socket.SocketType = (
            sock if sock is not None else stream.socket)  # type: ignore[attr-defined]
        self._send_lock = trio.Lock()
        self._receive_lock = trio.Lock()
        self._pending: deque[_Pending] = deque()
        # Plaintext goes straight to the socket (see plain_socket), a large frame received
        # in place; under TLS the stream encrypts and decrypts.
        plain = plain_socket.socket_of(stream)
        self._send_all: Callable[[bytes], Awaitable[None]] = stream.send_all
        self._receive_some: Callable[[int], Awaitable[bytes | bytearray]] = \
            stream.receive_some
        self._recv_into: Callable[[memoryview], Awaitable[int]] | None = None
        # Set once ApiVersions is answered: until then what arrives stays in the frame
        # buffer, where a peer that is no Kafka listener shows what it sent.
        self._in_place: Callable[[memoryview], Awaitable[int]] | None = None
        if plain is not None:
            self._send_all = functools.partial(plain_socket.send_all, plain)
            self._receive_some = functools.partial(plain_socket.receive_some, plain)
            self._in_place = functools.partial(plain_socket.receive_into, plain)
        # The frame being received in place: its buffer and how much of it arrived.
        self._partial: tuple[bytearray, int] | None = None

    @classmethod
    async def connect(cls, host: str, port: int, client_id: str | None = "raftka",
                      timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
                      security: ClientSecurity = PLAINTEXT,
                      sasl: SaslCredentials | None = None,
                      local_address: str | None = None,
                      send_buffer_bytes: int = OS_DEFAULT,
                      receive_buffer_bytes: int = OS_DEFAULT,
                      diagnose: bool = False) -> KafkaConnection:
        """Open a TCP connection (TLS when ``security`` says so), negotiate API versions
        and (with ``sasl``) authenticate, each step within ``timeout`` seconds.

        ``local_address`` (an IP address) binds the connection's source address;
        ``send_buffer_bytes`` / ``receive_buffer_bytes`` size the socket's buffers (-1: the
        OS default). With ``diagnose``, a connection that ends the way a security
        protocol mismatch ends one (here or at its first answer; see ``mismatch``) asks
        the listener what it speaks and raises SecurityProtocolMismatchError if it differs.

        Raises KafkaConnectionError if the endpoint cannot be reached or answers nothing
        usable in time (FatalConnectionError when retrying cannot help: a failed TLS
        handshake or SASL authentication, a mismatch), ProtocolError for an undecodable
        answer, KafkaError for an ApiVersions error.
        """
        try:
            with trio.fail_after(timeout):
                stream, sock = await open_transport(
                    host, port, security, local_address=local_address,
                    send_buffer_bytes=send_buffer_bytes, receive_buffer_bytes=receive_buffer_bytes)
        except trio.TooSlowError:
            raise KafkaConnectionError(
                f"connecting to {host}:{port} timed out after {timeout:g} s") from None
        except TlsHandshakeClosedError:
            if diagnose and (error := await probes.explain_handshake_closed(
                    host, port, security, timeout)) is not None:
                raise error from None
            raise
        conn = cls(stream, host, port, client_id, sock, security)
        try:
            await conn._open(timeout, sasl)
        except BaseException as exc:
            await conn.aclose()
            if diagnose and conn._closed_before_answer(exc) and (
                    error := await probes.explain_closed(
                        host, port, security, conn._frames.peek(), timeout)) is not None:
                raise error from None
            raise
        conn._unproven = diagnose and sasl is None
        logger.debug("connected to %s:%d", host, port)
        return conn

    async def _open(self, timeout: float, sasl: SaslCredentials | None) -> None:
        """ApiVersions, then SASL authentication when ``sasl`` is given."""
        request = self._session.api_versions_request()
        frame = await self._exchange(request, timeout)
        self._session.apply_api_versions(request, frame)
        self._recv_into = self._in_place
        if sasl is not None:
            steps = sasl_steps(self._session, sasl, self.host, self.port,
                               self.security.protocol)
            outgoing = next(steps)
            while True:
                frame = await self._exchange(outgoing, timeout)
                try:
                    outgoing = steps.send(frame)
                except StopIteration:
                    break

    async def request(self, api_key: int, body: dict[str, Any], version: int | None = None,
                      timeout: float = DEFAULT_REQUEST_TIMEOUT_S) -> dict[str, Any]:
        """Send one request and return the decoded response body.

        Uses the highest version both sides support unless ``version`` is given. Produce
        with acks=0 returns ``{}`` once written. Raises KafkaError(UNSUPPORTED_VERSION)
        before sending if no version fits, KafkaConnectionError if the connection fails,
        closes or the response takes longer than ``timeout`` seconds, and ProtocolError
        if the response cannot be decoded (the connection is then closed).
        """
        self._check_open()
        outgoing = self._session.build_request(api_key, body, version)
        frame = await self._exchange(outgoing, timeout)
        if frame is None:
            return {}
        try:
            body = self._session.parse_response(outgoing, frame)
        except ProtocolError as exc:
            await self._fail(f"undecodable response from {self.host}:{self.port}: {exc}")
            raise
        if self._unproven:
            await self._check_first_answer(api_key, body, timeout)
        return body

    async def _check_first_answer(self, api_key: int, body: dict[str, Any],
                                  timeout: float) -> None:
        """Raise SecurityProtocolMismatchError if the first answer after ApiVersions is a
        SASL listener's refusal of a client without SASL (see ``mismatch``)."""
        self._unproven = False
        if not refused_before_authentication(api_key, body):
            return
        error = await probes.explain_refusal(self.host, self.port, self.security, timeout)
        if error is not None:
            await self._fail(str(error))
            raise error

    async def aclose(self) -> None:
        """Close the connection; requests still waiting fail with KafkaConnectionError."""
        await self._fail("connection closed by the client")

    async def __aenter__(self) -> KafkaConnection:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _exchange(self, outgoing: OutgoingRequest, timeout: float) -> Any:
        """Write ``outgoing`` and wait for its frame (None when no response is expected)."""
        # A bare cancel scope rather than fail_after, whose generator-based context manager
        # costs more than the rest of a small request's bookkeeping.
        with trio.CancelScope(deadline=trio.current_time() + timeout) as scope:
            pending = await self._send(outgoing)
            if pending is None:
                return None
            lock = self._receive_lock
            while not pending.done:
                await _take(lock)
                try:
                    if not pending.done:
                        await self._receive_one()
                finally:
                    lock.release()
        if scope.cancelled_caught:
            reason = self._timeout_reason(outgoing, timeout)
            await self._fail(reason)
            raise KafkaConnectionError(reason)
        if pending.error is not None:
            raise pending.error
        return pending.result

    async def _send(self, outgoing: OutgoingRequest) -> _Pending | None:
        lock = self._send_lock
        await _take(lock)
        try:
            self._check_open()
            try:
                await self._send_all(outgoing.data)
            except BaseException as exc:
                # A partial write leaves the stream unusable, whatever interrupted it.
                reason = f"sending to {self.host}:{self.port} failed: {exc!r}"
                self._mark_closed(reason)
                if isinstance(exc, (trio.BrokenResourceError, trio.ClosedResourceError,
                                    OSError)):
                    raise KafkaConnectionError(reason) from None
                raise
            if not outgoing.expects_response:
                return None
            pending = _Pending(outgoing)
            self._pending.append(pending)
            return pending
        finally:
            lock.release()

    async def _receive_one(self) -> None:
        """Read one frame and hand it to the oldest pending request."""
        while True:
            try:
                frame = self._complete_frame()
            except ProtocolError as exc:
                await self._fail_with(exc)
                return
            if frame is not None:
                break
            self._check_open()
            try:
                received = await self._receive_more()
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                self._peer_closed = not self.closed  # reset by the peer, not closed here
                await self._fail(f"receiving from {self.host}:{self.port} failed: {exc!r}")
                return
            if not received:
                self._peer_closed = True
                await self._fail(f"{self.host}:{self.port} closed the connection")
                return
        if not self._pending:
            await self._fail_with(ProtocolError(
                f"{self.host}:{self.port} sent a response to no request"))
            return
        pending = self._pending.popleft()
        # A caller abandoned by an outer cancel scope leaves its slot; the frame is dropped.
        pending.complete(frame, None)

    def _complete_frame(self) -> bytes | bytearray | None:
        """The next frame if it has fully arrived. A large frame (a fetch answer) whose size
        is known is then received in place, into a buffer of its own size."""
        partial = self._partial
        if partial is not None:
            if partial[1] < len(partial[0]):
                return None
            self._partial = None
            return partial[0]
        frame = self._frames.next_frame()
        if frame is None and self._recv_into is not None:
            self._partial = self._frames.detach_frame(_IN_PLACE_MIN)
        return frame

    async def _receive_more(self) -> int:
        """Receive what the socket has for the frame being read; 0 when the peer closed.
        The state lives on the connection: a reader cancelled here loses nothing."""
        partial = self._partial
        if partial is None:
            data = await self._receive_some(self._receive_size())
            self._frames.feed(data)
            return len(data)
        assert self._recv_into is not None
        frame, filled = partial
        received = await self._recv_into(memoryview(frame)[filled:])
        self._partial = (frame, filled + received)
        return received

    async def _fail_with(self, error: ProtocolError) -> None:
        """Close after a protocol violation: the head request gets ``error``."""
        if self._pending:
            self._pending.popleft().complete(None, error)
        await self._fail(f"protocol error from {self.host}:{self.port}: {error}")

    async def _fail(self, reason: str) -> None:
        self._mark_closed(reason)
        await trio.aclose_forcefully(self._stream)

    def _mark_closed(self, reason: str) -> None:
        """Mark closed and fail every pending request, without waiting on the stream."""
        if self._closed_reason is None:
            self._closed_reason = reason
            logger.debug("closing %s:%d: %s", self.host, self.port, reason)
        error = self._closed_error()
        while self._pending:
            self._pending.popleft().complete(None, error)
        # Closing the socket directly needs no checkpoint, so it works even when cancelled.
        self._socket.close()
