"""BlockingKafkaConnection against a real trio server; the client runs in a worker thread."""

from __future__ import annotations

import socket
from typing import Any, Callable

import pytest
import trio

from clients.net import BlockingKafkaConnection, KafkaConnectionError
from clients.protocol import ApiKey, ErrorCode, KafkaError, ProtocolError, Request
from clients.protocol import encode_response
from tests.unit.clients.stub_broker import CLOSE, StubBroker
from tests.unit.clients.net.test_trio_connection import metadata_body, metadata_echo


async def in_thread(fn: Callable[[], Any]) -> Any:
    return await trio.to_thread.run_sync(fn)


async def test_blocking_request_negotiates_and_answers(nursery: trio.Nursery) -> None:
    stub = await StubBroker(versions={18: (0, 3), 3: (0, 6)},
                            handlers={ApiKey.METADATA: metadata_echo}).start(nursery)

    def run() -> tuple[dict, dict]:
        with BlockingKafkaConnection("127.0.0.1", stub.port, client_id="cli", timeout=5) as conn:
            first = conn.request(ApiKey.METADATA, metadata_body("a", "b"))
            second = conn.request(ApiKey.METADATA, {"topics": [{"name": "c"}]}, version=2)
            assert conn.broker_versions == {18: (0, 3), 3: (0, 6)}
        assert conn.closed
        return first, second

    first, second = await in_thread(run)
    assert [t["name"] for t in first["topics"]] == ["a", "b"]
    assert [t["name"] for t in second["topics"]] == ["c"]
    assert [r.api_version for r in stub.requests(ApiKey.METADATA)] == [6, 2]
    assert {r.client_id for r in stub.received} == {"cli"}


async def test_blocking_uses_v0_versions_after_unsupported_api_versions(
        nursery: trio.Nursery) -> None:
    stub = await StubBroker(versions={18: (0, 1), 3: (0, 3)}, api_versions_max=1).start(nursery)

    def run() -> dict:
        with BlockingKafkaConnection("127.0.0.1", stub.port, timeout=5) as conn:
            return dict(conn.broker_versions)

    assert await in_thread(run) == {18: (0, 1), 3: (0, 3)}


async def test_blocking_unsupported_version_raises_kafka_error(nursery: trio.Nursery) -> None:
    stub = await StubBroker(versions={18: (0, 3)}).start(nursery)

    def run() -> None:
        with BlockingKafkaConnection("127.0.0.1", stub.port, timeout=5) as conn:
            conn.request(ApiKey.METADATA, metadata_body("x"))

    with pytest.raises(KafkaError) as info:
        await in_thread(run)
    assert info.value.code == ErrorCode.UNSUPPORTED_VERSION


async def test_blocking_refused_connection() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(KafkaConnectionError, match=f"127.0.0.1:{port}"):
        BlockingKafkaConnection("127.0.0.1", port, timeout=5)


async def test_blocking_timeout_closes(nursery: trio.Nursery) -> None:
    stub = await StubBroker(handlers={ApiKey.METADATA: lambda r: None}).start(nursery)

    def run() -> BlockingKafkaConnection:
        conn = BlockingKafkaConnection("127.0.0.1", stub.port, timeout=0.2)
        with pytest.raises(KafkaConnectionError, match="timed out"):
            conn.request(ApiKey.METADATA, metadata_body("x"))
        return conn

    assert (await in_thread(run)).closed


async def test_blocking_server_close_raises_connection_error(nursery: trio.Nursery) -> None:
    stub = await StubBroker(handlers={ApiKey.METADATA: lambda r: CLOSE}).start(nursery)

    def run() -> None:
        with BlockingKafkaConnection("127.0.0.1", stub.port, timeout=5) as conn:
            with pytest.raises(KafkaConnectionError, match="closed"):
                conn.request(ApiKey.METADATA, metadata_body("x"))
            with pytest.raises(KafkaConnectionError):
                conn.request(ApiKey.METADATA, metadata_body("x"))

    await in_thread(run)


async def test_blocking_mismatched_correlation_id(nursery: trio.Nursery) -> None:
    def wrong_id(request: Request) -> bytes:
        return encode_response(request.api_key, request.api_version,
                               request.correlation_id + 1, {"topics": []})

    stub = await StubBroker(handlers={ApiKey.METADATA: wrong_id}).start(nursery)

    def run() -> bool:
        conn = BlockingKafkaConnection("127.0.0.1", stub.port, timeout=5)
        with pytest.raises(ProtocolError, match="correlation id"):
            conn.request(ApiKey.METADATA, metadata_body("x"))
        return conn.closed

    assert await in_thread(run)


async def test_blocking_pipelined_requests_keep_their_answers(nursery: trio.Nursery) -> None:
    release = trio.Event()

    async def held_metadata(request: Request) -> dict:
        if request.body.topics[0].name == "held":
            await release.wait()
        return metadata_echo(request)

    stub = await StubBroker(handlers={ApiKey.METADATA: held_metadata}).start(nursery)

    def run() -> list[Any]:
        with BlockingKafkaConnection("127.0.0.1", stub.port, timeout=5) as conn:
            held = conn.send(ApiKey.METADATA, metadata_body("held"))
            after = conn.send(ApiKey.METADATA, metadata_body("after"))
            not_yet = conn.receive(held, wait=False)
            trio.from_thread.run_sync(release.set)
            # Answered last: the two answers before it are kept for receive.
            direct = conn.request(ApiKey.METADATA, metadata_body("direct"))
            return [not_yet, conn.receive(after), conn.receive(held), direct]

    not_yet, after, held, direct = await in_thread(run)
    assert not_yet is None
    assert [[t["name"] for t in a["topics"]] for a in (after, held, direct)] == [
        ["after"], ["held"], ["direct"]]
