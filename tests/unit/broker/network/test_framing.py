"""FrameReader over real loopback sockets, plain and TLS: large frames received in place,
small ones buffered, every frame a writable buffer of its own, cancellation losing nothing;
the read timeout from a frame's first byte to its last; each frame charged to the memory
pool, reading waiting while it is spent."""

from __future__ import annotations

import os
import ssl
from contextlib import asynccontextmanager
from typing import AsyncIterator

import pytest
import trio
import trio.testing
import trustme

from broker.network.backlog import MemoryPool
from broker.network.framing import (
    DIRECT_INITIAL_MAX,
    DIRECT_READ_MIN,
    FrameError,
    FrameReader,
    FrameTimeout,
    ReaderIdle,
)
from tests.unit.broker.network.wire import framed


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


async def test_a_frame_must_arrive_whole_within_the_read_timeout_however_it_trickles() -> None:
    async with socket_pair() as (client, server):
        reader = FrameReader(server, 1 << 20, read_timeout_s=0.3)
        await client.send_all((1000).to_bytes(4, "big") + b"x")
        started = trio.current_time()
        async with trio.open_nursery() as nursery:
            async def trickle() -> None:
                while True:
                    await trio.sleep(0.05)
                    await client.send_all(b"x")

            nursery.start_soon(trickle)
            with pytest.raises(FrameTimeout, match="raftka.socket.request.read.timeout.ms"):
                await reader.next_frame()
            nursery.cancel_scope.cancel()
        assert 0.29 <= trio.current_time() - started < 1.0


async def test_no_frame_started_by_the_idle_deadline_is_reader_idle() -> None:
    async with socket_pair() as (client, server):
        reader = FrameReader(server, 1 << 20, read_timeout_s=0.1)
        with pytest.raises(ReaderIdle):
            await reader.next_frame(trio.current_time() + 0.2)
        assert not reader.in_frame
        await client.send_all(framed(b"after a pause"))
        frame = await reader.next_frame(trio.current_time() + 5)
        assert frame is not None and bytes(frame) == b"after a pause"


@pytest.mark.parametrize("size", [100, DIRECT_READ_MIN * 5 + 3])
async def test_each_frame_is_charged_to_the_pool_and_the_charge_passes_on(size: int) -> None:
    pool = MemoryPool(1 << 30)
    payload = os.urandom(size)
    async with socket_pair() as (client, server):
        reader = FrameReader(server, 1 << 20, pool=pool)
        frames = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.send_all, framed(payload) + framed(payload))
            for _ in range(2):
                frame = await reader.next_frame()
                assert frame is not None and bytes(frame) == payload
                frames.append(reader.take_charge())
        assert [charge.bytes for charge in frames] == [size, size]
        assert pool.used == 2 * size
        for charge in frames:
            charge.release()
        assert pool.used == 0


async def test_reading_waits_while_the_pool_is_spent_without_using_up_the_read_timeout(
        ) -> None:
    pool = MemoryPool(DIRECT_READ_MIN)
    holder, reserve = pool.charge(), pool.charge()
    assert pool.try_grow(holder, DIRECT_READ_MIN) and pool.try_grow(reserve, 1)
    async with socket_pair() as (client, server):
        reader = FrameReader(server, 1 << 20, pool=pool, read_timeout_s=0.2)
        await client.send_all(framed(b"waits for memory"))
        got: list[memoryview | None] = []
        async with trio.open_nursery() as nursery:
            async def read() -> None:
                got.append(await reader.next_frame())

            nursery.start_soon(read)
            await trio.sleep(0.5)  # well past the read timeout, waiting for the pool
            assert not got, "a frame was read while the pool was spent"
            holder.release()
        assert got[0] is not None and bytes(got[0]) == b"waits for memory"


async def test_discard_gives_back_a_partial_frames_memory() -> None:
    pool = MemoryPool(1 << 30)
    async with socket_pair() as (client, server):
        reader = FrameReader(server, 100 << 20, pool=pool)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.send_all,
                               (50 << 20).to_bytes(4, "big") + b"y" * DIRECT_READ_MIN)
            with trio.move_on_after(0.3):
                await reader.next_frame()
        assert 0 < pool.used <= 2 * DIRECT_READ_MIN + DIRECT_INITIAL_MAX
        reader.discard()
        assert pool.used == 0


@asynccontextmanager
async def tls_pair() -> AsyncIterator[tuple[trio.SSLStream, trio.SSLStream]]:
    """(client, server) ends of one TLS connection over loopback."""
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    async with socket_pair() as (client_socket, server_socket):
        client = trio.SSLStream(client_socket, client_context, server_hostname="127.0.0.1")
        server = trio.SSLStream(server_socket, server_context, server_side=True)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.do_handshake)
            nursery.start_soon(server.do_handshake)
        yield client, server


async def test_tls_frames_large_and_small_arrive_whole() -> None:
    large, small = os.urandom(3 * DIRECT_READ_MIN + 11), b"small"
    async with tls_pair() as (client, server):
        reader = FrameReader(server, 1 << 20)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.send_all, framed(large) + framed(small))
            first = await reader.next_frame()
            second = await reader.next_frame()
    assert first is not None and bytes(first) == large and not first.readonly
    assert second is not None and bytes(second) == small


async def test_tls_refuses_an_oversized_prefix_and_pins_only_what_arrived() -> None:
    async with tls_pair() as (client, server):
        reader = FrameReader(server, DIRECT_READ_MIN)
        await client.send_all((DIRECT_READ_MIN + 1).to_bytes(4, "big"))
        with pytest.raises(FrameError, match="socket.request.max.bytes"):
            await reader.next_frame()
    async with tls_pair() as (client, server):
        reader = FrameReader(server, 100 << 20, read_timeout_s=0.3)
        await client.send_all((100 << 20).to_bytes(4, "big") + b"z" * 10)
        with pytest.raises(FrameTimeout):
            await reader.next_frame()
        assert reader.reserved <= DIRECT_INITIAL_MAX
