"""Writing one size-prefixed response made of byte chunks and file ranges."""

from __future__ import annotations

import functools
import os
from typing import Awaitable, Callable, Sequence

import trio

from clients.net import plain_socket

from broker.log.results import FileRange

# Byte chunks are coalesced into one send up to this size; bigger ones go out as they are.
_COALESCE_LIMIT = 64 * 1024
# File ranges smaller than this are read and sent with their neighbours: one write where
# sendfile would take three (the bytes before, the range, the bytes after), each a segment
# the reader may wake for; a follower's fetch of one small batch is the common case.
_SENDFILE_MIN = 16 * 1024


def chunk_size(chunk: bytes | bytearray | memoryview | FileRange) -> int:
    if isinstance(chunk, (bytes, bytearray, memoryview)):
        return memoryview(chunk).nbytes
    return chunk.size


def can_sendfile(stream: trio.abc.SendStream) -> bool:
    """Whether file ranges may go straight from the page cache to the socket: a plain
    socket stream only (TLS must encrypt the bytes in user space)."""
    return getattr(stream, "socket", None) is not None and hasattr(os, "sendfile")


def read_range(fd: int, position: int, size: int) -> bytes:
    """One file range read whole (a fetch's range of record batches, taken as opaque
    bytes); BrokenResourceError if the file is shorter than the range promised."""
    data = os.pread(fd, size, position)
    while len(data) < size:
        more = os.pread(fd, size - len(data), position + len(data))
        if not more:
            raise trio.BrokenResourceError(
                f"file ended {size - len(data)} bytes short of the range")
        data += more
    return data


async def write_response(stream: trio.abc.SendStream, chunks: Sequence[object]) -> int:
    """Send `chunks` behind a 4-byte size prefix; returns the bytes sent (prefix included).

    File ranges go out by sendfile on a plain socket, but for small ones; on TLS each
    range is read into memory whole and sent with its neighbours, so the stream encrypts few
    large writes."""
    total = sum(chunk_size(chunk) for chunk in chunks)
    sendfile = can_sendfile(stream)
    sock = plain_socket.socket_of(stream)
    send_all: Callable[[bytes | bytearray | memoryview], Awaitable[None]] = (
        functools.partial(plain_socket.send_all, sock) if sock is not None
        else stream.send_all)
    pending: list[bytes | bytearray | memoryview] = [total.to_bytes(4, "big")]
    pending_bytes = 4

    async def flush() -> None:
        nonlocal pending, pending_bytes
        if pending:
            await send_all(pending[0] if len(pending) == 1 else b"".join(pending))
            pending, pending_bytes = [], 0

    for chunk in chunks:
        if not isinstance(chunk, (bytes, bytearray, memoryview)) and (
                not sendfile or chunk.size < _SENDFILE_MIN):  # type: ignore[attr-defined]
            chunk = read_range(chunk.fd, chunk.position, chunk.size)  # type: ignore[attr-defined]
        if isinstance(chunk, (bytes, bytearray, memoryview)):
            size = memoryview(chunk).nbytes
            if size >= _COALESCE_LIMIT:
                await flush()
                await send_all(chunk)
            else:
                pending.append(chunk)
                pending_bytes += size
                if pending_bytes >= _COALESCE_LIMIT:
                    await flush()
        else:
            await flush()
            await send_file_range(stream, chunk.fd, chunk.position, chunk.size)  # type: ignore[attr-defined]
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
        if size:
            # Between the pieces of a range the socket took in part, others may run; after
            # the last one the response's trailing bytes follow at once (a follower cannot
            # parse, and so acknowledge, the records before they arrive).
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
