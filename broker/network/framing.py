"""Reading 4-byte size-prefixed request frames from a trio stream.

The size is checked before anything is allocated for the frame; a frame's buffer grows with
what has arrived, never to what the prefix claims, and is charged to the server's memory pool
as it grows (reading waits while the pool is spent). From its first byte to its last a frame
has `read_timeout_s` to arrive (time spent waiting for the pool not counted): bytes trickling
in do not extend it."""

from __future__ import annotations

import fcntl
import functools
import math
import struct
import termios
from typing import Awaitable, Callable

import trio

from clients.net import plain_socket

from broker.network.backlog import Charge, MemoryPool

# One receive call asks for at most this much, so a huge frame is not one huge allocation.
_RECEIVE_CHUNK = 1 << 20
# Bytes read ahead at a time while looking for the next frame (possibly several pipelined
# small ones): a connection's buffer outside the pool.
_READ_AHEAD = 65536
# Frames at least this big are received into a buffer of their own (straight from the
# socket on plain streams): no per-chunk append into a shared buffer and no copy out of it
# afterwards. Smaller ones are read in chunks that may hold several pipelined frames.
DIRECT_READ_MIN = 64 * 1024
# A direct buffer starts as big as what has arrived (in the reader and, on plain sockets, in
# the kernel's receive queue), at least this much, and grows to what has arrived or doubles,
# so a peer that only announces a huge frame pins no more memory than twice what it has
# actually sent, plus this much.
DIRECT_INITIAL_MAX = 64 * 1024

RecvInto = Callable[[memoryview], Awaitable[int]]


class FrameError(Exception):
    """The peer sent a frame we refuse (its size, or too slowly); the connection must
    close."""


class FrameTimeout(FrameError):
    """A frame did not arrive whole within the read timeout."""


class ReaderIdle(Exception):
    """No frame started before the idle deadline given to `next_frame`."""


class FrameReader:
    """Restartable frame reader: a cancelled `next_frame` loses no bytes, so callers may wrap
    it in timeouts and call again.

    Every frame is a writable memoryview over a buffer of its own that the reader never
    touches again, so handlers may keep views into it and modify it in place (the produce
    path stamps offsets into the records it received). The pool bytes of the frame last
    returned pass to the caller with `take_charge()`."""

    def __init__(self, stream: trio.abc.ReceiveStream, max_frame_bytes: int,
                 on_receive: Callable[[], None] | None = None, *,
                 pool: MemoryPool | None = None, read_timeout_s: float = math.inf) -> None:
        self._stream = stream
        self._max = max_frame_bytes
        self._buffer = bytearray()
        self._on_receive = on_receive
        self._pool = pool if pool is not None else MemoryPool(0)
        # The pool bytes of the frame being read, and of the frame last returned.
        self._charge = Charge(self._pool)
        self._returned: Charge | None = None
        self.read_timeout_s = read_timeout_s
        # Plaintext straight from the socket (see plain_socket), large frames in place;
        # TLS through the stream, which decrypts.
        sock = plain_socket.socket_of(stream)
        self._socket = sock
        self._recv_into: RecvInto = self._copy_into
        self._receive_some: Callable[[int], Awaitable[bytes | bytearray]] = stream.receive_some
        if sock is not None:
            self._recv_into = functools.partial(plain_socket.receive_into, sock)
            self._receive_some = functools.partial(plain_socket.receive_some, sock)
        # A large frame being received in place: its buffer, its size, and how much of it
        # has arrived.
        self._frame: bytearray | None = None
        self._size = 0
        self._filled = 0
        # When the frame in progress must be complete (trio time; inf between frames), the
        # last time read from the clock (never later than now), and the scope of the running
        # `next_frame`.
        self._deadline = math.inf
        self._clock = trio.current_time()
        self._scope: trio.CancelScope | None = None

    @property
    def buffered(self) -> int:
        """Bytes received and not yet handed out as a frame."""
        return len(self._buffer) + self._filled

    @property
    def reserved(self) -> int:
        """Bytes of buffer the reader holds now (received or allocated ahead of receipt)."""
        return len(self._buffer) + (0 if self._frame is None else len(self._frame))

    @property
    def in_frame(self) -> bool:
        """Whether part of a frame has arrived (its read deadline runs)."""
        return self._frame is not None or bool(self._buffer)

    def take_charge(self) -> Charge:
        """The pool bytes of the frame last returned, for the caller to release once the
        request is handled."""
        charge, self._returned = self._returned, None
        return charge if charge is not None else Charge(self._pool)

    def discard(self) -> None:
        """Give back the memory of a frame left incomplete and of one returned but not taken
        (the connection is closing)."""
        self._frame = None
        self._buffer = bytearray()
        self._charge.release()
        if self._returned is not None:
            self._returned.release()

    async def next_frame(self, idle_deadline: float = math.inf) -> memoryview | None:
        """The next frame without its size prefix; None at a clean end of stream.

        Raises FrameError for a negative or oversized size (checked before the body arrives),
        FrameTimeout when a frame takes longer than the read timeout, ReaderIdle when no
        frame started by `idle_deadline`, and trio.BrokenResourceError / EOFError for a
        stream that ends mid-frame."""
        while True:
            if self._frame is not None or self._buffer:
                deadline = self._deadline
            else:
                # A frame may start during this call: wake up by its deadline at the latest
                # (counted from a time no later than now) to check on it.
                deadline = min(idle_deadline, self._clock + self.read_timeout_s)
            with trio.CancelScope(deadline=deadline) as scope:
                self._scope = scope
                try:
                    return await self._read_frame()
                finally:
                    self._scope = None
            now = self._clock = trio.current_time()
            if self._frame is not None or self._buffer:
                if now >= self._deadline:
                    raise FrameTimeout(f"request not received whole within "
                                       f"raftka.socket.request.read.timeout.ms "
                                       f"({self.read_timeout_s * 1000:.0f} ms); "
                                       f"{self.buffered} bytes arrived")
            elif now >= idle_deadline:
                raise ReaderIdle()

    async def _read_frame(self) -> memoryview | None:
        if self._frame is None:
            if not await self._fill(4):
                return None
            size = int.from_bytes(self._buffer[:4], "big", signed=True)
            if size < 0:
                raise FrameError(f"negative frame size {size}")
            if size > self._max:
                raise FrameError(f"frame of {size} bytes exceeds socket.request.max.bytes "
                                 f"({self._max})")
            if size < DIRECT_READ_MIN or len(self._buffer) >= 4 + size:
                missing = size - self._charge.bytes
                if missing > 0 and not self._pool.try_grow(self._charge, missing):
                    await self._grow(missing)
                return self._frame_done(await self._buffered_frame(size))
            await self._start_direct(size)
        return self._frame_done(await self._finish_direct())

    def _frame_done(self, frame: memoryview) -> memoryview:
        if self._returned is not None:
            self._returned.release()  # not taken: nobody holds that frame's place any more
        self._returned, self._charge = self._charge, Charge(self._pool)
        # Bytes already here belong to the next frame, which has started.
        self._deadline = math.inf
        if self._buffer:
            self._started()
        return frame

    def _started(self) -> None:
        """A frame's first bytes arrived: its read deadline starts (the running
        `next_frame` wakes up by then, see there)."""
        self._clock = trio.current_time()
        self._deadline = self._clock + self.read_timeout_s

    async def _grow(self, size: int) -> None:
        """Charge `size` more bytes to the pool; waiting for it does not count against the
        frame's read deadline."""
        if self._pool.try_grow(self._charge, size):
            return
        scope = self._scope
        waited_from = trio.current_time()
        if scope is not None:
            scope.deadline = math.inf
        try:
            await self._pool.grow(self._charge, size)
        finally:
            self._deadline += trio.current_time() - waited_from
            if scope is not None:
                scope.deadline = self._deadline

    async def _buffered_frame(self, size: int) -> memoryview:
        await self._fill(4 + size)
        if len(self._buffer) == 4 + size:
            frame = memoryview(self._buffer)[4:]
            self._buffer = bytearray()
            return frame
        frame = memoryview(self._buffer[4 : 4 + size])
        del self._buffer[: 4 + size]
        return frame

    def _queued(self) -> int:
        """Bytes waiting in the kernel's receive queue (plain sockets; 0 for TLS, whose
        queued bytes are still encrypted)."""
        if self._socket is None:
            return 0
        try:
            answer = fcntl.ioctl(self._socket.fileno(), termios.FIONREAD, b"\0\0\0\0")
        except OSError:
            return 0
        return int(struct.unpack("i", answer)[0])

    @staticmethod
    def _capacity(size: int, current: int, arrived: int) -> int:
        """The buffer for a frame of `size` of which `arrived` bytes are here or in the
        kernel: all of it once half has arrived (one allocation for a sender that keeps
        up), else twice what it has or what has arrived; never more than twice what arrived
        plus DIRECT_INITIAL_MAX."""
        if 2 * arrived >= size:
            return size
        return min(size, max(2 * current, arrived, DIRECT_INITIAL_MAX))

    async def _start_direct(self, size: int) -> None:
        have = len(self._buffer) - 4
        arrived = have if 2 * have >= size else have + self._queued()
        capacity = self._capacity(size, 0, arrived)
        missing = capacity - self._charge.bytes
        if missing > 0 and not self._pool.try_grow(self._charge, missing):
            await self._grow(missing)
        frame = bytearray(capacity)
        frame[:have] = memoryview(self._buffer)[4:]
        self._buffer = bytearray()
        self._frame, self._size, self._filled = frame, size, have

    async def _grow_direct(self) -> bytearray:
        """Double the direct buffer (up to the frame size), keeping what has arrived."""
        assert self._frame is not None
        capacity = self._capacity(self._size, len(self._frame), self._filled + self._queued())
        await self._grow(capacity - len(self._frame))
        grown = bytearray(capacity)
        grown[: self._filled] = self._frame
        self._frame = grown
        return grown

    async def _finish_direct(self) -> memoryview:
        assert self._frame is not None
        while self._filled < self._size:
            frame = self._frame
            if self._filled == len(frame):
                frame = await self._grow_direct()
            received = await self._recv_into(memoryview(frame)[self._filled:])
            if not received:
                raise EOFError("stream ended inside a frame")
            self._filled += received
            if self._on_receive is not None:
                self._on_receive()
        frame = self._frame
        self._frame, self._size, self._filled = None, 0, 0
        return memoryview(frame)

    async def _copy_into(self, buffer: memoryview) -> int:
        """`recv_into` for streams that only hand out bytes (TLS): one chunk, copied."""
        data = await self._receive_some(min(len(buffer), _RECEIVE_CHUNK))
        buffer[: len(data)] = data
        return len(data)

    async def _fill(self, needed: int) -> bool:
        """Buffer at least `needed` bytes; False if the stream ends with nothing buffered,
        EOFError if it ends part-way."""
        while len(self._buffer) < needed:
            wanted = min(_RECEIVE_CHUNK, max(needed - len(self._buffer), _READ_AHEAD))
            data = await self._receive_some(wanted)
            if not data:
                if self._buffer:
                    raise EOFError("stream ended inside a frame")
                return False
            if not self._buffer:
                self._started()
            self._buffer += data
            if self._on_receive is not None:
                self._on_receive()
        return True
