"""Plaintext socket I/O for trio connections, without trio's per-call scheduling.

A trio socket operation yields to the scheduler twice even when the kernel could serve it at
once, and its stream wrapper adds context managers; a client pays that for every request and
every answer, and a broker for every request it reads and every answer it writes. These
functions try the system call first and wait for readiness only when it would block, so they
are checkpoints only when they wait: a caller's loop must hold another checkpoint (a
connection always waits for its answer; the broker's connection loops take a semaphore and a
channel per request). Errors are trio's, as a SocketStream reports them. POSIX only: they use
the socket's file descriptor with ``os.write`` and ``os.read``.
"""

from __future__ import annotations

import os

import trio


def socket_of(stream: object) -> trio.socket.SocketType | None:
    """The socket under a plaintext SocketStream on a platform where these functions
    work, else None (TLS streams encrypt and decrypt, so they keep their own methods)."""
    if os.name == "posix" and isinstance(stream, trio.SocketStream):
        return stream.socket
    return None


def _fd(sock: trio.socket.SocketType) -> int:
    fd = sock.fileno()
    if fd < 0:
        raise trio.ClosedResourceError("the socket is closed")
    return fd


async def send_all(sock: trio.socket.SocketType, data: bytes | bytearray | memoryview) -> None:
    """Write all of ``data``, waiting only while the socket's send buffer is full."""
    view = memoryview(data)
    while view:
        try:
            sent = os.write(_fd(sock), view)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            continue
        except OSError as exc:
            raise trio.BrokenResourceError(f"send failed: {exc}") from exc
        view = view[sent:]


async def receive_some(sock: trio.socket.SocketType, max_bytes: int) -> bytes:
    """Up to ``max_bytes`` bytes, waiting until some arrive; b"" once the peer closed."""
    while True:
        try:
            return os.read(_fd(sock), max_bytes)
        except BlockingIOError:
            await trio.lowlevel.wait_readable(sock)
        except OSError as exc:
            raise trio.BrokenResourceError(f"receive failed: {exc}") from exc


async def receive_into(sock: trio.socket.SocketType, buffer: memoryview) -> int:
    """Read into ``buffer``, waiting until some bytes arrive; 0 once the peer closed."""
    while True:
        try:
            return os.readv(_fd(sock), [buffer])
        except BlockingIOError:
            await trio.lowlevel.wait_readable(sock)
        except OSError as exc:
            raise trio.BrokenResourceError(f"receive failed: {exc}") from exc
