"""Test helpers: a running server on an ephemeral port and a raw frame client."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import trio

from broker.config import Listener
from broker.apis.request import RequestRouter
from broker.network import NetworkServer, ServerSettings


@asynccontextmanager
async def running_server(router: RequestRouter, *, codec: Any = None, **settings: object
                         ) -> AsyncIterator[tuple[NetworkServer, tuple[str, int]]]:
    settings.setdefault("shutdown_grace_s", 2.0)
    server = NetworkServer([Listener("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT")], router,
                           ServerSettings(**settings), codec=codec)  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        addresses = await nursery.start(server.serve)
        try:
            yield server, addresses["PLAINTEXT"]
        finally:
            server.stop()


async def connect(address: tuple[str, int]) -> trio.SocketStream:
    return await trio.open_tcp_stream(*address)


async def read_exact(stream: trio.SocketStream, size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        chunk = await stream.receive_some(size - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


async def read_frame(stream: trio.SocketStream, timeout: float = 10.0) -> bytes | None:
    """The next response frame (without size prefix), or None if the server closed."""
    with trio.fail_after(timeout):
        try:
            header = await read_exact(stream, 4)
        except trio.BrokenResourceError:
            return None
        if header is None:
            return None
        return await read_exact(stream, int.from_bytes(header, "big"))


def kafka_python_frame(request_class: type, correlation_id: int, client_id: str = "test",
                       **fields: object) -> bytes:
    """A size-prefixed request frame built by kafka-python (an independent encoder)."""
    request = request_class(**fields)
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(request.encode(framed=True, header=True))


def raw_header_v1(api_key: int, api_version: int, correlation_id: int, client_id: str) -> bytes:
    name = client_id.encode()
    return (api_key.to_bytes(2, "big") + api_version.to_bytes(2, "big")
            + correlation_id.to_bytes(4, "big") + len(name).to_bytes(2, "big") + name)


def framed(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload
