"""KafkaConnection against a real trio server speaking the real codec."""

from __future__ import annotations

import socket

import pytest
import trio
import trio.testing

from clients.net import KafkaConnection, KafkaConnectionError
from clients.protocol import SUPPORTED_VERSIONS, ApiKey, ErrorCode, KafkaError, ProtocolError
from clients.protocol import Request, encode_response
from tests.unit.clients.stub_broker import CLOSE, StubBroker


def metadata_echo(request: Request) -> dict:
    """Answers Metadata naming the requested topics, so callers can match their answer."""
    return {"topics": [{"name": t.name, "partitions": []} for t in request.body.topics]}


def metadata_body(*names: str) -> dict:
    return {"topics": [{"name": n} for n in names], "allow_auto_topic_creation": False}


def free_port_without_listener() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_connect_negotiates_versions_with_api_versions_v3(nursery: trio.Nursery) -> None:
    stub = await StubBroker(versions={18: (0, 3), 3: (0, 7)}).start(nursery)
    async with await KafkaConnection.connect("127.0.0.1", stub.port, client_id="t") as conn:
        assert conn.broker_versions == {18: (0, 3), 3: (0, 7)}
        assert conn.supports(ApiKey.METADATA)
        assert not conn.supports(ApiKey.PRODUCE)
    (opening,) = stub.requests(ApiKey.API_VERSIONS)
    assert opening.api_version == 3
    assert opening.client_id == "t"
    assert opening.body.client_software_name == "raftka"


async def test_connect_uses_v0_versions_when_api_versions_v3_is_unsupported(
        nursery: trio.Nursery) -> None:
    stub = await StubBroker(versions={18: (0, 2), 3: (0, 4)}, api_versions_max=2,
                            handlers={ApiKey.METADATA: metadata_echo}).start(nursery)
    async with await KafkaConnection.connect("127.0.0.1", stub.port) as conn:
        assert conn.broker_versions == {18: (0, 2), 3: (0, 4)}
        response = await conn.request(ApiKey.METADATA, metadata_body("a"))
    assert [t["name"] for t in response["topics"]] == ["a"]
    assert stub.requests(ApiKey.METADATA)[0].api_version == 4


async def test_request_uses_highest_common_version(nursery: trio.Nursery) -> None:
    ours = SUPPORTED_VERSIONS[ApiKey.METADATA]
    stub = await StubBroker(versions={18: (0, 3), 3: (0, ours[1] + 5)},
                            handlers={ApiKey.METADATA: metadata_echo}).start(nursery)
    async with await KafkaConnection.connect("127.0.0.1", stub.port) as conn:
        await conn.request(ApiKey.METADATA, metadata_body("x"))
        await conn.request(ApiKey.METADATA, metadata_body("x"), version=4)
    assert [r.api_version for r in stub.requests(ApiKey.METADATA)] == [ours[1], 4]


async def test_unsupported_version_is_refused_before_sending(nursery: trio.Nursery) -> None:
    stub = await StubBroker(versions={18: (0, 3), 3: (1, 4)},
                            handlers={ApiKey.METADATA: metadata_echo}).start(nursery)
    async with await KafkaConnection.connect("127.0.0.1", stub.port) as conn:
        with pytest.raises(KafkaError) as info:
            await conn.request(ApiKey.METADATA, metadata_body("x"), version=5)
        assert info.value.code == ErrorCode.UNSUPPORTED_VERSION
        with pytest.raises(KafkaError):
            await conn.request(ApiKey.PRODUCE, {"acks": 1, "timeout_ms": 1, "topic_data": []})
        # The connection is still usable.
        assert (await conn.request(ApiKey.METADATA, metadata_body("y")))["topics"][0]["name"] == "y"
    assert len(stub.requests(ApiKey.METADATA)) == 1


async def test_concurrent_callers_each_get_their_own_response(nursery: trio.Nursery) -> None:
    stub = await StubBroker(handlers={ApiKey.METADATA: metadata_echo}).start(nursery)
    results: dict[str, list[str]] = {}
    async with await KafkaConnection.connect("127.0.0.1", stub.port) as conn:

        async def ask(name: str) -> None:
            response = await conn.request(ApiKey.METADATA, metadata_body(name))
            results[name] = [t["name"] for t in response["topics"]]

        async with trio.open_nursery() as callers:
            for i in range(50):
                callers.start_soon(ask, f"topic-{i}")
    assert results == {f"topic-{i}": [f"topic-{i}"] for i in range(50)}
    correlation_ids = [r.correlation_id for r in stub.requests(ApiKey.METADATA)]
    assert len(set(correlation_ids)) == 50
    assert stub.connections == 1


async def test_mismatched_correlation_id_is_a_protocol_error_and_closes(
        nursery: trio.Nursery) -> None:
    def wrong_id(request: Request) -> bytes:
        return encode_response(request.api_key, request.api_version,
                               request.correlation_id + 7, {"topics": []})

    stub = await StubBroker(handlers={ApiKey.METADATA: wrong_id}).start(nursery)
    conn = await KafkaConnection.connect("127.0.0.1", stub.port)
    with pytest.raises(ProtocolError, match="correlation id"):
        await conn.request(ApiKey.METADATA, metadata_body("x"))
    assert conn.closed
    with pytest.raises(KafkaConnectionError):
        await conn.request(ApiKey.METADATA, metadata_body("x"))


async def test_undecodable_response_is_a_protocol_error_and_closes(
        nursery: trio.Nursery) -> None:
    def garbage(request: Request) -> bytes:
        return request.correlation_id.to_bytes(4, "big") + b"\xff"

    stub = await StubBroker(handlers={ApiKey.METADATA: garbage}).start(nursery)
    conn = await KafkaConnection.connect("127.0.0.1", stub.port)
    with pytest.raises(ProtocolError):
        await conn.request(ApiKey.METADATA, metadata_body("x"))
    assert conn.closed


async def test_server_closing_fails_every_waiting_caller(nursery: trio.Nursery) -> None:
    arrived = trio.Event()
    release = trio.Event()

    async def close_after_both(request: Request) -> object:
        if request.body.topics[0].name == "first":
            await release.wait()
            return CLOSE
        arrived.set()
        return None

    stub = await StubBroker(handlers={ApiKey.METADATA: close_after_both}).start(nursery)
    conn = await KafkaConnection.connect("127.0.0.1", stub.port)
    errors: list[BaseException] = []

    async def ask(name: str) -> None:
        try:
            await conn.request(ApiKey.METADATA, metadata_body(name))
        except KafkaConnectionError as exc:
            errors.append(exc)

    async with trio.open_nursery() as callers:
        callers.start_soon(ask, "first")
        await trio.testing.wait_all_tasks_blocked()
        callers.start_soon(ask, "second")
        # The stub handles one request at a time, so "second" arrives only after "first" is
        # answered; release "first" now and let the close reach both callers.
        release.set()
    assert len(errors) == 2
    assert conn.closed
    assert not arrived.is_set()


async def test_refused_connection_raises_connection_error() -> None:
    port = free_port_without_listener()
    with pytest.raises(KafkaConnectionError, match=f"127.0.0.1:{port}"):
        await KafkaConnection.connect("127.0.0.1", port, timeout=5)


async def test_request_timeout_closes_the_connection(nursery: trio.Nursery) -> None:
    stub = await StubBroker(handlers={ApiKey.METADATA: lambda r: None}).start(nursery)
    conn = await KafkaConnection.connect("127.0.0.1", stub.port)
    start = trio.current_time()
    with pytest.raises(KafkaConnectionError, match="timed out"):
        await conn.request(ApiKey.METADATA, metadata_body("x"), timeout=0.2)
    assert trio.current_time() - start < 5
    assert conn.closed


async def test_connect_times_out_when_api_versions_is_never_answered(
        nursery: trio.Nursery) -> None:
    stub = await StubBroker(handlers={ApiKey.API_VERSIONS: lambda r: None}).start(nursery)
    with pytest.raises(KafkaConnectionError, match="timed out"):
        await KafkaConnection.connect("127.0.0.1", stub.port, timeout=0.2)


async def test_produce_with_acks_zero_returns_without_a_response(nursery: trio.Nursery) -> None:
    stub = await StubBroker(handlers={ApiKey.PRODUCE: lambda r: None,
                                      ApiKey.METADATA: metadata_echo}).start(nursery)
    async with await KafkaConnection.connect("127.0.0.1", stub.port) as conn:
        body = {"acks": 0, "timeout_ms": 100, "topic_data": []}
        assert await conn.request(ApiKey.PRODUCE, body, timeout=5) == {}
        # Later requests are not confused by the missing response.
        response = await conn.request(ApiKey.METADATA, metadata_body("after"), timeout=5)
    assert response["topics"][0]["name"] == "after"
    assert len(stub.requests(ApiKey.PRODUCE)) == 1


async def test_a_cancelled_caller_does_not_disturb_the_others(nursery: trio.Nursery) -> None:
    gate = trio.Event()

    async def slow_first(request: Request) -> dict:
        if request.body.topics[0].name == "cancelled":
            await gate.wait()
        return metadata_echo(request)

    stub = await StubBroker(handlers={ApiKey.METADATA: slow_first}).start(nursery)
    async with await KafkaConnection.connect("127.0.0.1", stub.port) as conn:
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as inner:
                inner.start_soon(conn.request, ApiKey.METADATA, metadata_body("cancelled"))
                await trio.testing.wait_all_tasks_blocked()
                scope.cancel()
        gate.set()
        response = await conn.request(ApiKey.METADATA, metadata_body("kept"), timeout=5)
        assert response["topics"][0]["name"] == "kept"
        assert not conn.closed


async def test_connect_sizes_the_socket_buffers(nursery: trio.Nursery) -> None:
    stub = await StubBroker().start(nursery)
    async with await KafkaConnection.connect("127.0.0.1", stub.port, send_buffer_bytes=36864,
                                             receive_buffer_bytes=45056) as conn:
        sock = conn._socket
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) in (36864, 2 * 36864)
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) in (45056, 2 * 45056)


async def test_large_response_is_received_in_place_across_a_cancelled_reader(
        nursery: trio.Nursery) -> None:
    stub = await StubBroker(handlers={ApiKey.METADATA: metadata_echo}).start(nursery)
    names = [f"topic-{i:06d}-" + "n" * 100 for i in range(3000)]  # a ~350 KB answer
    async with await KafkaConnection.connect("127.0.0.1", stub.port) as conn:
        real_recv_into, in_frame = conn._recv_into, trio.Event()

        async def recv_into(view: memoryview) -> int:
            if not in_frame.is_set():
                in_frame.set()
                await trio.sleep_forever()  # the first reader is cancelled mid-frame
            return await real_recv_into(view)

        conn._recv_into = recv_into
        async with trio.open_nursery() as first_reader:
            first_reader.start_soon(conn.request, ApiKey.METADATA, metadata_body(*names))
            await in_frame.wait()  # it is inside a frame received in place
            first_reader.cancel_scope.cancel()
        response = await conn.request(ApiKey.METADATA, metadata_body(*names[:2]))
        assert [t["name"] for t in response["topics"]] == names[:2]
