"""Plaintext socket I/O without trio's per-call scheduling (clients.net.plain_socket)."""

from __future__ import annotations

import socket
import struct

import pytest
import trio
import trio.testing

from clients.net import plain_socket


async def stream_pair() -> tuple[trio.SocketStream, trio.SocketStream]:
    left, right = trio.socket.socketpair()
    return trio.SocketStream(left), trio.SocketStream(right)


def test_only_plaintext_socket_streams_qualify() -> None:
    left, right = socket.socketpair()
    try:
        stream = trio.SocketStream(trio.socket.from_stdlib_socket(left))
        assert plain_socket.socket_of(stream) is stream.socket
        assert plain_socket.socket_of(trio.testing.MemorySendStream()) is None
    finally:
        left.close()
        right.close()


async def test_a_write_larger_than_the_socket_buffer_waits_and_arrives_whole() -> None:
    sender, receiver = await stream_pair()
    payload = bytes(range(256)) * 40_000        # ~10 MB: far past any socket buffer
    received = bytearray()

    async def read_all() -> None:
        view = memoryview(bytearray(1 << 16))
        while len(received) < len(payload):
            if len(received) % 2:
                received.extend(await plain_socket.receive_some(receiver.socket, 1 << 16))
            else:
                n = await plain_socket.receive_into(receiver.socket, view)
                received.extend(view[:n])

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_all)
            await plain_socket.send_all(sender.socket, payload)
    assert received == payload


async def test_end_of_stream_reads_as_empty() -> None:
    sender, receiver = await stream_pair()
    await plain_socket.send_all(sender.socket, b"last")
    await sender.aclose()
    with trio.fail_after(10):
        assert await plain_socket.receive_some(receiver.socket, 100) == b"last"
        assert await plain_socket.receive_some(receiver.socket, 100) == b""
        assert await plain_socket.receive_into(receiver.socket, memoryview(bytearray(8))) == 0


async def test_a_closed_socket_is_a_closed_resource() -> None:
    sender, _receiver = await stream_pair()
    await sender.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await plain_socket.send_all(sender.socket, b"x")
    with pytest.raises(trio.ClosedResourceError):
        await plain_socket.receive_some(sender.socket, 10)


async def test_a_reset_connection_is_a_broken_resource() -> None:
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    client = trio.socket.socket()
    await client.connect(listener.getsockname())
    server, _ = await listener.accept()
    # Closing with a zero linger sends a reset instead of an orderly end.
    server.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    server.close()
    with trio.fail_after(10), pytest.raises(trio.BrokenResourceError):
        await plain_socket.receive_some(client, 10)
    client.close()
    listener.close()
