"""Reading 4-byte size-prefixed request frames from a trio stream."""

from __future__ import annotations

import functools
from typing import Awaitable, Callable

import trio

from clients.net import plain_socket

# One receive call asks for at most this much, so a huge frame is not one huge allocation.
_RECEIVE_CHUNK = 1 << 20
# Frames at least this big are received straight into a buffer of their own (on socket
# streams): no per-chunk append into a shared buffer and no copy out of it afterwards.
# Smaller ones are read in chunks that may hold several pipelined frames.
DIRECT_READ_MIN = 64 * 1024
# A direct buffer starts at most this big and doubles as bytes arrive, so a peer that only
# announces a huge frame pins no more memory than it has actually sent (plus this much).
DIRECT_INITIAL_MAX = 1 << 20

RecvInto = Callable[[memoryview], Awaitable[int]]


class FrameError(Exception):
    """The peer sent a frame size we refuse; the connection must close."""


class FrameReader:
    """Restartable frame reader: a cancelled `next_frame` loses no bytes, so callers may wrap
    it in timeouts (idle checks) and call again.

    Every frame is a writable memoryview over a buffer of its own that the reader never
    touches again, so handlers may keep views into it and modify it in place (the produce
    path stamps offsets into the records it received)."""

    def __init__(self, stream: trio.abc.ReceiveStream, max_frame_bytes: int,
                 on_receive: Callable[[], None] | None = None) -> None:
        self._stream = stream
        self._max = max_frame_bytes
        self._buffer = bytearray()
        self._on_receive = on_receive
        # Plaintext straight from the socket (see plain_socket), large frames in place;
        # TLS through the stream, which decrypts.
        sock = plain_socket.socket_of(stream)
        self._recv_into: RecvInto | None = None
        self._receive_some: Callable[[int], Awaitable[bytes | bytearray]] = stream.receive_some
        if sock is not None:
            self._recv_into = functools.partial(plain_socket.receive_into, sock)
            self._receive_some = functools.partial(plain_socket.receive_some, sock)
        # A large frame being received in place: its buffer, its size, and how much of it
        # has arrived.
        self._frame: bytearray | None = None
        self._size = 0
        self._filled = 0

    @property
    def buffered(self) -> int:
        """Bytes received and not yet handed out as a frame."""
        return len(self._buffer) + self._filled

    @property
    def reserved(self) -> int:
        """Bytes of buffer the reader holds now (received or allocated ahead of receipt)."""
        return len(self._buffer) + (0 if self._frame is None else len(self._frame))

    async def next_frame(self) -> memoryview | None:
        """The next frame without its size prefix; None at a clean end of stream.

        Raises FrameError for a negative or oversized size (checked before the body arrives)
        and trio.BrokenResourceError / EOFError for a stream that ends mid-frame."""
        if self._frame is None:
            if not await self._fill(4):
                return None
            size = int.from_bytes(self._buffer[:4], "big", signed=True)
            if size < 0:
                raise FrameError(f"negative frame size {size}")
            if size > self._max:
                raise FrameError(f"frame of {size} bytes exceeds socket.request.max.bytes "
                                 f"({self._max})")
            if size < DIRECT_READ_MIN or self._recv_into is None or len(self._buffer) >= 4 + size:
                return await self._buffered_frame(size)
            self._start_direct(size)
        return await self._finish_direct()

    async def _buffered_frame(self, size: int) -> memoryview:
        await self._fill(4 + size)
        if len(self._buffer) == 4 + size:
            frame = memoryview(self._buffer)[4:]
            self._buffer = bytearray()
            return frame
        frame = memoryview(self._buffer[4 : 4 + size])
        del self._buffer[: 4 + size]
        return frame

    def _start_direct(self, size: int) -> None:
        have = len(self._buffer) - 4
        frame = bytearray(min(size, max(have, DIRECT_INITIAL_MAX)))
        frame[:have] = memoryview(self._buffer)[4:]
        self._buffer = bytearray()
        self._frame, self._size, self._filled = frame, size, have

    def _grow_direct(self) -> bytearray:
        """Double the direct buffer (up to the frame size), keeping what has arrived."""
        assert self._frame is not None
        grown = bytearray(min(self._size, 2 * len(self._frame)))
        grown[: self._filled] = self._frame
        self._frame = grown
        return grown

    async def _finish_direct(self) -> memoryview:
        assert self._frame is not None and self._recv_into is not None
        while self._filled < self._size:
            frame = self._frame if self._filled < len(self._frame) else self._grow_direct()
            received = await self._recv_into(memoryview(frame)[self._filled:])
            if not received:
                raise EOFError("stream ended inside a frame")
            self._filled += received
            if self._on_receive is not None:
                self._on_receive()
        frame = self._frame
        self._frame, self._size, self._filled = None, 0, 0
        return memoryview(frame)

    async def _fill(self, needed: int) -> bool:
        """Buffer at least `needed` bytes; False if the stream ends with nothing buffered,
        EOFError if it ends part-way."""
        while len(self._buffer) < needed:
            wanted = min(_RECEIVE_CHUNK, max(needed - len(self._buffer), 65536))
            data = await self._receive_some(wanted)
            if not data:
                if self._buffer:
                    raise EOFError("stream ended inside a frame")
                return False
            self._buffer += data
            if self._on_receive is not None:
                self._on_receive()
        return True
