"""Writing responses that mix bytes and file ranges over a real TCP socket."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
import trio

from broker.log.results import FileRange
from broker.network.transport import write_response


@pytest.mark.skipif(not hasattr(socket, "TCP_CORK"), reason="TCP_CORK is Linux's")
async def test_a_sendfile_response_arrives_whole_and_leaves_the_socket_uncorked(
        tmp_path: Path) -> None:
    payload = os.urandom(5000)
    path = tmp_path / "segment.log"
    path.write_bytes(b"head" + payload)
    fd = os.open(path, os.O_RDONLY)
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    try:
        client = await trio.open_tcp_stream("127.0.0.1", port)
        server = await listeners[0].accept()
        chunks = [b"header", FileRange(fd, 4, len(payload)), b"trailer"]
        await write_response(server, chunks)
        assert server.socket.getsockopt(socket.IPPROTO_TCP, socket.TCP_CORK) == 0
        # A later small write is not held back by a cork left behind.
        await server.send_all(b"next")
        expected = 4 + 6 + len(payload) + 7 + 4
        received = bytearray()
        with trio.fail_after(5):
            while len(received) < expected:
                received += await client.receive_some()
        assert bytes(received) == (expected - 8).to_bytes(4, "big") + b"header" + payload + \
            b"trailer" + b"next"
        await client.aclose()
        await server.aclose()
    finally:
        os.close(fd)
        for listener in listeners:
            await listener.aclose()
