"""Reading 4-byte size-prefixed request frames from a trio stream."""

from __future__ import annotations

from typing import Callable

import trio

# One receive call asks for at most this much, so a huge frame is not one huge allocation.
_RECEIVE_CHUNK = 1 << 20


class FrameError(Exception):
    """The peer sent a frame size we refuse; the connection must close."""


class FrameReader:
    """Restartable frame reader: a cancelled `next_frame` loses no bytes, so callers may wrap
    it in timeouts (idle checks) and call again."""

    def __init__(self, stream: trio.abc.ReceiveStream, max_frame_bytes: int,
                 on_receive: Callable[[], None] | None = None) -> None:
        self._stream = stream
        self._max = max_frame_bytes
        self._buffer = bytearray()
        self._on_receive = on_receive

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    async def next_frame(self) -> memoryview | None:
        """The next frame without its size prefix; None at a clean end of stream.

        Raises FrameError for a negative or oversized size (checked before the body arrives)
        and trio.BrokenResourceError / EOFError for a stream that ends mid-frame."""
        if not await self._fill(4):
            return None
        size = int.from_bytes(self._buffer[:4], "big", signed=True)
        if size < 0:
            raise FrameError(f"negative frame size {size}")
        if size > self._max:
            raise FrameError(f"frame of {size} bytes exceeds socket.request.max.bytes "
                             f"({self._max})")
        await self._fill(4 + size)
        if len(self._buffer) == 4 + size:
            frame = memoryview(self._buffer)[4:]
            self._buffer = bytearray()
            return frame
        frame = memoryview(bytes(memoryview(self._buffer)[4 : 4 + size]))
        del self._buffer[: 4 + size]
        return frame

    async def _fill(self, needed: int) -> bool:
        """Buffer at least `needed` bytes; False if the stream ends with nothing buffered,
        EOFError if it ends part-way."""
        while len(self._buffer) < needed:
            wanted = min(_RECEIVE_CHUNK, max(needed - len(self._buffer), 65536))
            data = await self._stream.receive_some(wanted)
            if not data:
                if self._buffer:
                    raise EOFError("stream ended inside a frame")
                return False
            self._buffer += data
            if self._on_receive is not None:
                self._on_receive()
        return True
