"""FrameReader over real loopback sockets: large frames received in place, small ones
buffered, every frame a writable buffer of its own, cancellation losing nothing."""

from __future__ import annotations

import os
from contextlib import asynccontextmanager
from typing import AsyncIterator

import pytest
import trio
import trio.testing

from broker.network.framing import DIRECT_INITIAL_MAX, DIRECT_READ_MIN, FrameError, FrameReader
from tests.unit.network.wire import framed


@asynccontextmanager
async def socket_pair() -> AsyncIterator[tuple[trio.SocketStream, trio.SocketStream]]:
    """(client, server) ends of one loopback TCP connection."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    client = await trio.open_tcp_stream("127.0.0.1", port)
    server = await listeners[0].accept()
    try:
        yield client, server
    finally:
        await client.aclose()
        await server.aclose()
        for listener in listeners:
            await listener.aclose()


async def test_large_frame_sent_in_pieces_arrives_whole_then_the_next_small_one() -> None:
    large = os.urandom(3 * DIRECT_READ_MIN + 17)
    small = b"small frame"
    data = framed(large) + framed(small)
    async with socket_pair() as (client, server):
        reader = FrameReader(server, 1 << 20)
        async with trio.open_nursery() as nursery:
            async def send_in_pieces() -> None:
                for start in range(0, len(data), 50_000):
                    await client.send_all(data[start:start + 50_000])

            nursery.start_soon(send_in_pieces)
            first = await reader.next_frame()
            second = await reader.next_frame()
    assert first is not None and second is not None
    assert bytes(first) == large
    assert bytes(second) == small
    assert reader.buffered == 0


async def test_frames_are_writable_and_independent_of_each_other() -> None:
    payloads = [b"a" * 10, os.urandom(DIRECT_READ_MIN * 2), b"b" * 10, b"c" * 10]
    async with socket_pair() as (client, server):
        await client.send_all(b"".join(framed(p) for p in payloads))
        reader = FrameReader(server, 1 << 20)
        frames = [await reader.next_frame() for _ in payloads]
    for frame in frames:
        assert frame is not None and not frame.readonly
        frame[0] = 0xFF  # the produce path stamps offsets into frames in place
    for frame, payload in zip(frames, payloads):
        assert frame is not None
        assert bytes(frame[1:]) == payload[1:] and frame[0] == 0xFF


async def test_cancelled_read_inside_a_large_frame_loses_no_bytes() -> None:
    payload = os.urandom(DIRECT_READ_MIN * 4)
    data = framed(payload)
    half = len(data) // 2
    async with socket_pair() as (client, server):
        reader = FrameReader(server, 1 << 20)
        await client.send_all(data[:half])
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(reader.next_frame)
                # Cancel once the reader has taken all that was sent and waits for more.
                with trio.fail_after(5):
                    while reader.buffered < half - 4:
                        await trio.sleep(0.001)
                await trio.testing.wait_all_tasks_blocked()
                assert reader.buffered == half - 4
                scope.cancel()
        await client.send_all(data[half:])
        frame = await reader.next_frame()
    assert frame is not None and bytes(frame) == payload


async def test_stream_ending_inside_a_large_frame_is_an_eof_error() -> None:
    data = framed(os.urandom(DIRECT_READ_MIN * 2))
    async with socket_pair() as (client, server):
        reader = FrameReader(server, 1 << 20)
        await client.send_all(data[: len(data) - 100])
        await client.send_eof()
        with pytest.raises(EOFError):
            await reader.next_frame()


async def test_size_over_the_limit_is_refused_before_the_body_arrives() -> None:
    async with socket_pair() as (client, server):
        reader = FrameReader(server, DIRECT_READ_MIN)
        await client.send_all((DIRECT_READ_MIN + 1).to_bytes(4, "big"))
        with pytest.raises(FrameError):
            await reader.next_frame()


async def test_clean_end_of_stream_between_frames_is_none() -> None:
    async with socket_pair() as (client, server):
        reader = FrameReader(server, 1 << 20)
        await client.send_all(framed(b"last"))
        await client.send_eof()
        frame = await reader.next_frame()
        assert frame is not None and bytes(frame) == b"last"
        assert await reader.next_frame() is None


async def test_announcing_a_huge_frame_reserves_only_what_has_arrived() -> None:
    payload = os.urandom(3 * DIRECT_INITIAL_MAX + 5)
    data = framed(payload)
    async with socket_pair() as (client, server):
        reader = FrameReader(server, 100 << 20)
        async with trio.open_nursery() as nursery:
            received: list[memoryview | None] = []

            async def read() -> None:
                received.append(await reader.next_frame())

            nursery.start_soon(read)
            await client.send_all(data[:DIRECT_READ_MIN])
            await trio.testing.wait_all_tasks_blocked()
            # Only the size was announced: the reader must not have allocated the frame.
            assert reader.reserved <= DIRECT_INITIAL_MAX
            # The rest arrives in pieces; the buffer grows as it does and nothing is lost.
            for start in range(DIRECT_READ_MIN, len(data), 300_000):
                await client.send_all(data[start:start + 300_000])
    assert received and received[0] is not None
    assert bytes(received[0]) == payload and not received[0].readonly
    assert reader.buffered == 0
