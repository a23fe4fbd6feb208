"""One client connection: read frames, run handlers concurrently, answer in request order.

Whoever settles the response at the head of the queue writes it (and the settled ones
behind it) at once, in its own task: a request answered in order costs no hop to a writer
task, which on a follower's fetch or an acks=all produce is latency on every round trip."""

from __future__ import annotations

import logging
from collections import deque
from typing import Mapping, Sequence

import trio

from broker.apis.api_versions import API_VERSIONS_KEY, api_versions_body
from broker.apis.request import (
    UNSUPPORTED_VERSION,
    CloseAfterResponse,
    CloseConnection,
    ConnectionContext,
    DecodedRequest,
)
from broker.apis.request import RequestRouter
from broker import parking
from broker.handled_alone import HANDLED_ALONE
from broker.network.backlog import Charge, MemoryPool, RequestBacklog
from broker.network.codec import WireCodec
from broker.network.framing import FrameError, FrameReader, ReaderIdle
from broker.network.large_requests import LargeRequests
from clients.protocol.arrays import TooManyElements
from broker.network.settings import ServerSettings
from broker.network.transport import write_response
from broker.apis.sasl import SASL_SESSION
from broker.quota.muting import THROTTLED_UNTIL, wait_until_unmuted
from broker.sasl.mechanisms import SaslAuthenticationError
from broker.sasl.session import ILLEGAL_SASL_STATE, SaslSession

logger = logging.getLogger(__name__)


class _Slot:
    """A response position in the connection's order; filled when its handler finishes."""

    __slots__ = ("settled", "chunks", "close_reason", "close_after", "large")

    def __init__(self) -> None:
        self.settled = False
        # Whether its request holds the server's large-request lane.
        self.large = False
        self.chunks: Sequence[object] | None = None
        self.close_reason: str | None = None
        # Set when the connection closes once this response is written.
        self.close_after: str | None = None

    def fill(self, chunks: Sequence[object] | None) -> None:
        self.chunks = chunks
        self.settled = True

    def fail(self, reason: str) -> None:
        self.close_reason = reason
        self.settled = True


class Connection:
    """Pipelines up to `max_in_flight` requests; responses leave strictly in arrival order.

    Each request read takes its frame's memory from the server's `pool` and a place in the
    server's `backlog` (reading waits while either is full); both go back when its handler
    returns or parks (`broker.parking`)."""

    def __init__(self, stream: trio.abc.Stream, ctx: ConnectionContext, *,
                 router: RequestRouter, codec: WireCodec, settings: ServerSettings,
                 supported_versions: Mapping[int, tuple[int, int]],
                 sasl: SaslSession | None = None, backlog: RequestBacklog | None = None,
                 pool: MemoryPool | None = None, large: LargeRequests | None = None) -> None:
        self._stream = stream
        self._backlog = backlog
        self._large = large
        self.ctx = ctx
        # On a SASL listener: the connection's authentication state (None elsewhere).
        self._sasl = sasl
        if sasl is not None:
            ctx.scratch[SASL_SESSION] = sasl
        self._router = router
        self._codec = codec
        self._settings = settings
        self._max_elements = settings.max_request_elements
        self._supported_versions = supported_versions
        self._in_flight = trio.Semaphore(settings.max_in_flight_per_connection)
        self._idle_timeout = settings.idle_timeout_s
        self._last_activity = trio.current_time()
        self._reader = FrameReader(stream, settings.max_request_bytes, self._touch, pool=pool,
                                   read_timeout_s=settings.request_read_timeout_s)
        self._read_scope = trio.CancelScope()
        self._nursery: trio.Nursery | None = None
        # Responses not yet written, in request order; `_writing` while one task writes.
        self._queue: deque[_Slot] = deque()
        self._writing = False
        # Set once the connection is closing: nothing more is written (a handler that
        # settles without a checkpoint would otherwise still send its answer).
        self._closing = False

    def stop_reading(self) -> None:
        """Graceful stop: take no new request; in-flight ones still get their responses."""
        self._read_scope.cancel()

    def _touch(self) -> None:
        self._last_activity = trio.current_time()

    @property
    def last_activity(self) -> float:
        """When bytes last went either way (trio time)."""
        return self._last_activity

    def close(self, reason: str) -> None:
        """Close the connection now, logging `reason`."""
        if self._nursery is not None:
            self._close_now(reason)

    def _close_now(self, reason: str) -> None:
        logger.warning("closing connection %d from %s:%d on %s: %s", self.ctx.connection_id,
                       self.ctx.peer[0], self.ctx.peer[1], self.ctx.listener_name, reason)
        self._cancel()

    def _cancel(self) -> None:
        self._closing = True
        assert self._nursery is not None
        self._nursery.cancel_scope.cancel()

    async def run(self) -> None:
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                with self._read_scope:
                    await self._read_loop()
        finally:
            self._reader.discard()
            with trio.CancelScope(shield=True):
                await trio.aclose_forcefully(self._stream)

    async def _read_loop(self) -> None:
        reader = self._reader
        backlog = self._backlog
        while True:
            try:
                frame = await self._next_frame_or_idle(reader)
            except FrameError as exc:
                self._close_now(str(exc))
                return
            except (EOFError, trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if frame is None:
                return
            # The frame's memory, and a place in the backlog (waiting while it is full).
            admission = reader.take_charge()
            try:
                if backlog is not None:
                    if not backlog.try_enter():
                        await backlog.enter()
                    admission.backlog = backlog
                if THROTTLED_UNTIL in self.ctx.scratch:
                    # A quota throttled this client (KIP-219): its next request waits.
                    await wait_until_unmuted(self.ctx.scratch)
                    self._touch()
                await self._in_flight.acquire()
                if not await self._dispatch(frame, admission):
                    return
            except BaseException:
                admission.release()
                raise
            # Drop the loop's references, so a parked request's frame is not kept alive
            # while the next one is awaited.
            frame = admission = None  # type: ignore[assignment]

    async def _dispatch(self, frame: memoryview, admission: Charge) -> bool:
        """Decode `frame` and start handling it; False when the connection closes."""
        codec = self._codec
        slot = _Slot()
        self._queue.append(slot)
        sasl = self._sasl
        if sasl is not None and sasl.expects_raw_token:
            answered = self._raw_sasl_token(sasl, frame, slot)
            admission.release()
            self._write_soon()
            return answered
        large = self._large
        try:
            if large is not None and large.off_loop(frame):
                await large.enter(slot)
                slot.large = True
                request = await large.decode(codec, frame, self._max_elements)
            else:
                request = codec.decode_request(frame, max_elements=self._max_elements)
            if large is not None and not slot.large and large.names_many_partitions(request,
                                                                                     len(frame)):
                await large.enter(slot)
                slot.large = True
        except codec.UnsupportedVersionError as exc:
            self._leave_large(slot)
            admission.release()
            self._answer_unsupported(exc, slot)
            if (sasl is not None and not sasl.authenticated
                    and getattr(exc, "api_key", None) != API_VERSIONS_KEY):
                slot.close_after = "unsupported request version before SASL authentication"
            self._write_soon()
            return True
        except TooManyElements as exc:
            self._leave_large(slot)
            admission.release()
            self._close_now(f"oversized request: {exc} (raftka.socket.request.max.elements)")
            return False
        except codec.ProtocolError as exc:
            self._leave_large(slot)
            admission.release()
            self._close_now(f"unparsable request: {exc}")
            return False
        except BaseException:
            self._leave_large(slot)
            raise
        if sasl is not None:
            refusal = sasl.admit(request.api_key)
            if refusal is not None:
                self._leave_large(slot)
                admission.release()
                if sasl.expired:
                    slot.fail(refusal)
                else:
                    body = self._router.error_body(request.api_key, request,
                                                   ILLEGAL_SASL_STATE)
                    self._encode_into(slot, request.api_key, request.api_version,
                                      request.correlation_id, body)
                    slot.close_after = refusal
                self._write_soon()
                return False
            if sasl.serial:
                # Before authentication one request at a time: each step decides what the
                # next frame may be.
                await self._process(request, slot, admission)
                if slot.close_after is not None or slot.close_reason is not None:
                    return False
                self._note_principal(sasl)
                return True
        if slot.large:
            # Handled before this connection's next request is read, so that its handler
            # may let the other connections run midway without a later request of this one
            # overtaking it (a Produce's appends keep their order, as in Kafka's muted
            # channel).
            await self._process(request, slot, admission)
            return slot.close_after is None and slot.close_reason is None
        assert self._nursery is not None
        self._nursery.start_soon(self._process, request, slot, admission)
        return True

    def _raw_sasl_token(self, sasl: SaslSession, frame: memoryview, slot: _Slot) -> bool:
        """A bare SASL token (after SaslHandshake v0): answer with the bare reply token, or
        close, since this form cannot carry an error. False when the connection closes."""
        try:
            reply = sasl.raw_token(bytes(frame))
        except SaslAuthenticationError as exc:
            slot.fail(f"SASL authentication failed: {exc}")
            return False
        self._note_principal(sasl)
        slot.fill([reply])
        return True

    def _note_principal(self, sasl: SaslSession) -> None:
        if sasl.authenticated and sasl.principal_name is not None:
            self.ctx.principal = f"User:{sasl.principal_name}"

    async def _next_frame_or_idle(self, reader: FrameReader) -> memoryview | None:
        while True:
            try:
                return await reader.next_frame(self._last_activity + self._idle_timeout)
            except ReaderIdle:
                pass
            busy = self._in_flight.value < self._settings.max_in_flight_per_connection
            if busy:
                self._touch()  # a pending (long-poll) request is activity
                continue
            if trio.current_time() >= self._last_activity + self._idle_timeout:
                logger.info("closing idle connection %d from %s:%d on %s",
                            self.ctx.connection_id, self.ctx.peer[0], self.ctx.peer[1],
                            self.ctx.listener_name)
                return None

    async def _process(self, request: DecodedRequest, slot: _Slot,
                       admission: Charge) -> None:
        token = parking.RELEASE.set(admission.release)
        alone = HANDLED_ALONE.set(slot.large)
        try:
            await self._handle(request, slot)
        finally:
            HANDLED_ALONE.reset(alone)
            parking.RELEASE.reset(token)
            admission.release()
            self._leave_large(slot)
        await self._write_settled()

    def _leave_large(self, slot: _Slot) -> None:
        if slot.large:
            slot.large = False
            assert self._large is not None
            self._large.leave(slot)

    async def _handle(self, request: DecodedRequest, slot: _Slot) -> None:
        try:
            body = await self._router.dispatch(request, self.ctx)
        except CloseAfterResponse as exc:
            self._encode_into(slot, request.api_key, request.api_version,
                              request.correlation_id, exc.body)
            slot.close_after = str(exc)
            return
        except CloseConnection as exc:
            slot.fail(str(exc))
            return
        if body is None:
            slot.fill(None)
            return
        if slot.large:
            assert self._large is not None
            try:
                chunks = await self._large.encode(self._codec, request.api_key,
                                                  request.api_version, request.correlation_id,
                                                  body)
            except Exception as exc:
                _encoding_failed(slot, request.api_key, request.api_version, exc)
                return
            slot.fill(chunks)
            return
        self._encode_into(slot, request.api_key, request.api_version, request.correlation_id,
                          body)

    def _answer_unsupported(self, exc: Exception, slot: _Slot) -> None:
        api_key = int(getattr(exc, "api_key", -1))
        api_version = int(getattr(exc, "api_version", -1))
        correlation_id = int(getattr(exc, "correlation_id", 0))
        if api_key == API_VERSIONS_KEY:
            # Kafka answers an unknown ApiVersions version with a v0 body listing what it
            # supports, so the client can retry with a version both sides know.
            body = api_versions_body(self._router, self._supported_versions,
                                     UNSUPPORTED_VERSION)
            self._encode_into(slot, api_key, 0, correlation_id, body)
            return
        supported = self._supported_versions.get(api_key)
        if supported is None:
            slot.fail(f"unknown api key {api_key} (version {api_version})")
            return
        # The requested version has no schema: answer in the nearest one the codec has.
        version = min(max(api_version, supported[0]), supported[1])
        body = self._router.error_body(api_key, None, UNSUPPORTED_VERSION, version)
        self._encode_into(slot, api_key, version, correlation_id, body)

    def _encode_into(self, slot: _Slot, api_key: int, api_version: int, correlation_id: int,
                     body: dict) -> None:
        try:
            chunks = self._codec.encode_response_chunks(api_key, api_version,
                                                               correlation_id, body)
        except Exception as exc:
            _encoding_failed(slot, api_key, api_version, exc)
            return
        slot.fill(chunks)

    async def _linger(self) -> None:
        """After a refusal: wait (bounded) for the client to read the answer and close."""
        with trio.move_on_after(self._settings.failed_authentication_delay_s):
            try:
                while await self._stream.receive_some(65536):
                    pass
            except (trio.BrokenResourceError, trio.ClosedResourceError,
                    trio.BusyResourceError):
                pass

    def _write_soon(self) -> None:
        """A response settled in the read loop is written by a task of its own, so a client
        slow to read cannot stall the reading."""
        assert self._nursery is not None
        self._nursery.start_soon(self._write_settled)

    async def _write_settled(self) -> None:
        """Write the settled responses at the head of the queue, in order. One task writes
        at a time; a response settled meanwhile is written by it, after the one it writes."""
        if self._writing or self._closing:
            return
        self._writing = True
        try:
            while self._queue and self._queue[0].settled and not self._closing:
                slot = self._queue.popleft()
                try:
                    if not await self._write(slot):
                        return
                finally:
                    self._in_flight.release()
        finally:
            self._writing = False

    async def _write(self, slot: _Slot) -> bool:
        """Send one response; False when the connection closes."""
        try:
            if slot.close_reason is not None:
                self._close_now(slot.close_reason)
                return False
            if slot.chunks is not None:
                await write_response(self._stream, slot.chunks)
                self._touch()
            if slot.close_after is not None:
                await self._linger()
                self._close_now(slot.close_after)
                return False
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._cancel()
            return False
        return True


def _encoding_failed(slot: _Slot, api_key: int, api_version: int, exc: Exception) -> None:
    logger.error("cannot encode response for api %d v%d: %s", api_key, api_version, exc)
    slot.fail(f"cannot encode response for api {api_key} v{api_version}")
