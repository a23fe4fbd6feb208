"""Writing one size-prefixed response made of byte chunks and file ranges."""

from __future__ import annotations

import os
import weakref
from dataclasses import dataclass
from typing import Sequence

import trio

# Byte chunks are coalesced into one send up to this size; bigger ones go out as they are.
_COALESCE_LIMIT = 64 * 1024


@dataclass(frozen=True)
class FileRange:
    """A byte range of an open file, sent with `os.sendfile` on plaintext sockets."""

    fd: int
    position: int
    size: int

    @classmethod
    def pinned(cls, fd: int, position: int, size: int) -> FileRange:
        """A range over a duplicate of `fd`, closed when the range is dropped.

        A response may wait in a connection's queue, or stall mid-send, while the log closes
        the segment (topic deletion, retention, an empty segment rolled away); sending from
        a descriptor of its own keeps it reading that segment's bytes, never whatever file
        later reuses the number."""
        own = os.dup(fd)
        try:
            pinned = cls(own, position, size)
            weakref.finalize(pinned, os.close, own)
        except BaseException:
            os.close(own)
            raise
        return pinned


def chunk_size(chunk: object) -> int:
    if isinstance(chunk, (bytes, bytearray, memoryview)):
        return memoryview(chunk).nbytes
    length = getattr(chunk, "length", None)
    return int(length if length is not None else chunk.size)  # type: ignore[attr-defined]


def _file_range(chunk: object) -> tuple[int, int, int]:
    fd = getattr(chunk, "fd", None)
    if fd is None:
        fd = chunk.file.fileno()  # type: ignore[attr-defined]
    return int(fd), int(chunk.position), chunk_size(chunk)  # type: ignore[attr-defined]


async def write_response(stream: trio.abc.SendStream, chunks: Sequence[object]) -> int:
    """Send `chunks` behind a 4-byte size prefix; returns the bytes sent (prefix included)."""
    total = sum(chunk_size(chunk) for chunk in chunks)
    pending: list[bytes | bytearray | memoryview] = [total.to_bytes(4, "big")]
    pending_bytes = 4

    async def flush() -> None:
        nonlocal pending, pending_bytes
        if pending:
            await stream.send_all(pending[0] if len(pending) == 1 else b"".join(pending))
            pending, pending_bytes = [], 0

    for chunk in chunks:
        if isinstance(chunk, (bytes, bytearray, memoryview)):
            size = memoryview(chunk).nbytes
            if size >= _COALESCE_LIMIT:
                await flush()
                await stream.send_all(chunk)
            else:
                pending.append(chunk)
                pending_bytes += size
                if pending_bytes >= _COALESCE_LIMIT:
                    await flush()
        else:
            await flush()
            await send_file_range(stream, *_file_range(chunk))
    await flush()
    return total + 4


async def send_file_range(stream: trio.abc.SendStream, fd: int, position: int,
                          size: int) -> None:
    """`os.sendfile` on a plain socket stream; pread + send_all on anything else (TLS)."""
    sock = getattr(stream, "socket", None)
    if sock is None or not hasattr(os, "sendfile"):
        await _copy_file_range(stream, fd, position, size)
        return
    sock_fd = sock.fileno()
    while size > 0:
        try:
            sent = os.sendfile(sock_fd, fd, position, size)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            continue
        except (BrokenPipeError, ConnectionResetError) as exc:
            # The peer went away mid-response (e.g. a follower was killed): that ends this
            # connection only, as trio's own send_all reports it.
            raise trio.BrokenResourceError(f"peer closed the connection: {exc}") from exc
        if sent == 0:
            # The promised length is already on the wire: the connection cannot continue.
            raise trio.BrokenResourceError(f"file ended {size} bytes short of the range")
        position += sent
        size -= sent
        await trio.lowlevel.checkpoint()


async def _copy_file_range(stream: trio.abc.SendStream, fd: int, position: int,
                           size: int) -> None:
    while size > 0:
        data = os.pread(fd, min(size, 1 << 20), position)
        if not data:
            raise trio.BrokenResourceError(f"file ended {size} bytes short of the range")
        await stream.send_all(data)
        position += len(data)
        size -= len(data)
