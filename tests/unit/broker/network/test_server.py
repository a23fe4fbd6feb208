"""The network server over real loopback sockets, with kafka-python as the client encoder."""

from __future__ import annotations

import gc
import logging
import os
import socket

import pytest
import trio
from kafka.protocol.admin import ListGroupsRequest, ListGroupsResponse
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

import clients.protocol as codec
from broker.config import Listener
from broker.apis.api_versions import install_api_versions
from broker.apis.request import RequestRouter
from broker.log.results import FileRange
from broker.network import NetworkServer, ServerSettings
from tests.unit.broker.network.wire import (
    connect,
    framed,
    kafka_python_frame,
    raw_header_v1,
    read_frame,
    running_server,
)

API_VERSIONS = 18
LIST_GROUPS = 16
FETCH = 1


def api_versions_router() -> RequestRouter:
    router = RequestRouter()
    install_api_versions(router, codec.SUPPORTED_VERSIONS)
    return router


def api_versions_frame(correlation_id: int, version: int = 3) -> bytes:
    fields = ({"client_software_name": "t", "client_software_version": "1"} if version >= 3
              else {})
    return kafka_python_frame(ApiVersionsRequest[version], correlation_id, **fields)


def decode_api_versions(frame: bytes, version: int = 3) -> object:
    return ApiVersionsResponse.decode(frame, version=version, header=True)


async def assert_connection_works(address: tuple[str, int]) -> None:
    async with await connect(address) as stream:
        await stream.send_all(api_versions_frame(99))
        frame = await read_frame(stream)
        assert frame is not None
        assert decode_api_versions(frame)._header.correlation_id == 99


async def assert_closed_by_server(stream: trio.SocketStream) -> None:
    assert await read_frame(stream) is None


async def test_api_versions_advertises_exactly_the_routed_apis() -> None:
    router = api_versions_router()

    async def list_groups(request, ctx):
        return {"error_code": 0, "groups": []}

    router.register(LIST_GROUPS, list_groups)
    router.register(9999, list_groups)  # routed but unknown to the codec: not advertised
    async with running_server(router) as (_, address):
        async with await connect(address) as stream:
            await stream.send_all(api_versions_frame(7))
            response = decode_api_versions(await read_frame(stream))
    assert response._header.correlation_id == 7
    assert response.error_code == 0
    advertised = {(k.api_key, k.min_version, k.max_version) for k in response.api_keys}
    assert advertised == {(API_VERSIONS, *codec.SUPPORTED_VERSIONS[API_VERSIONS]),
                          (LIST_GROUPS, *codec.SUPPORTED_VERSIONS[LIST_GROUPS])}


async def test_pipelined_requests_are_answered_in_request_order() -> None:
    count = 10
    finished = {i: trio.Event() for i in range(1, count + 2)}
    finished[count + 1].set()
    router = RequestRouter()

    async def slow_first(request, ctx):
        # Request i completes only after request i+1 has: completion order is reversed.
        await finished[request.correlation_id + 1].wait()
        finished[request.correlation_id].set()
        return {"error_code": 0, "api_keys": []}

    router.register(API_VERSIONS, slow_first)
    async with running_server(router) as (_, address):
        async with await connect(address) as stream:
            await stream.send_all(b"".join(api_versions_frame(i) for i in range(1, count + 1)))
            order = [decode_api_versions(await read_frame(stream))._header.correlation_id
                     for _ in range(count)]
    assert order == list(range(1, count + 1))


async def test_responses_settled_while_one_is_being_written_follow_it_in_order() -> None:
    """The first response is too big for the socket's buffers, and the client reads nothing
    until every later request was answered: those wait behind it, then follow in order."""
    payload = os.urandom(16 << 20)
    answered = trio.Semaphore(0)
    router = api_versions_router()

    async def big_fetch(request, ctx):
        return {"responses": [{"topic": "t", "partitions": [
            {"partition_index": 0, "records": payload}]}]}

    async def small(request, ctx):
        answered.release()
        return {"error_code": 0, "api_keys": []}

    router.register(FETCH, big_fetch)
    router.register(API_VERSIONS, small)
    async with running_server(router) as (_, address):
        async with await connect(address) as stream:
            fetch = framed(codec.encode_request(FETCH, 12, 1, "test", {"topics": []}))
            await stream.send_all(fetch + b"".join(api_versions_frame(i) for i in range(2, 6)))
            with trio.fail_after(10):
                for _ in range(4):
                    await answered.acquire()
            first = await read_frame(stream)
            later = [decode_api_versions(await read_frame(stream))._header.correlation_id
                     for _ in range(4)]
    answered_id, body = codec.decode_response(FETCH, 12, first)
    assert answered_id == 1
    assert bytes(body["responses"][0]["partitions"][0]["records"]) == payload
    assert later == [2, 3, 4, 5]


async def test_request_without_response_is_skipped_in_order() -> None:
    router = RequestRouter()

    async def silent_for_odd(request, ctx):
        if request.correlation_id % 2:
            return None  # like Produce with acks=0
        return {"error_code": 0, "api_keys": []}

    router.register(API_VERSIONS, silent_for_odd)
    async with running_server(router) as (_, address):
        async with await connect(address) as stream:
            await stream.send_all(b"".join(api_versions_frame(i) for i in range(1, 5)))
            got = [decode_api_versions(await read_frame(stream))._header.correlation_id
                   for _ in range(2)]
    assert got == [2, 4]


async def test_oversized_frame_closes_only_that_connection(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="broker.network")
    async with running_server(api_versions_router(), max_request_bytes=1000) as (_, address):
        async with await connect(address) as bystander, await connect(address) as offender:
            await offender.send_all((5000).to_bytes(4, "big") + b"x" * 100)
            await assert_closed_by_server(offender)
            await bystander.send_all(api_versions_frame(1))
            assert decode_api_versions(await read_frame(bystander))._header.correlation_id == 1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    message = warnings[0].getMessage()
    assert "socket.request.max.bytes" in message and "127.0.0.1" in message


async def test_negative_frame_size_closes_the_connection() -> None:
    async with running_server(api_versions_router()) as (_, address):
        async with await connect(address) as offender:
            await offender.send_all((-5).to_bytes(4, "big", signed=True))
            await assert_closed_by_server(offender)
        await assert_connection_works(address)


async def test_garbage_closes_only_that_connection(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="broker.network")
    async with running_server(api_versions_router()) as (_, address):
        async with await connect(address) as bystander, await connect(address) as offender:
            await offender.send_all(framed(b"\x07\x01garbage"))
            await assert_closed_by_server(offender)
            await bystander.send_all(api_versions_frame(3))
            assert decode_api_versions(await read_frame(bystander))._header.correlation_id == 3
    assert any("unparsable request" in r.getMessage() for r in caplog.records)


async def test_unrouted_api_is_answered_with_unsupported_version() -> None:
    async with running_server(api_versions_router()) as (_, address):
        async with await connect(address) as stream:
            await stream.send_all(kafka_python_frame(ListGroupsRequest[0], 11))
            response = ListGroupsResponse.decode(await read_frame(stream), version=0,
                                                 header=True)
    assert response._header.correlation_id == 11
    assert response.error_code == 35


async def test_unsupported_version_is_answered_with_error_35_in_nearest_version() -> None:
    router = api_versions_router()

    async def list_groups(request, ctx):
        raise AssertionError("an unsupported version must not reach the handler")

    router.register(LIST_GROUPS, list_groups)
    async with running_server(router) as (_, address):
        async with await connect(address) as stream:
            await stream.send_all(framed(raw_header_v1(LIST_GROUPS, 99, 12, "test")))
            max_version = codec.SUPPORTED_VERSIONS[LIST_GROUPS][1]
            response = ListGroupsResponse.decode(await read_frame(stream),
                                                 version=max_version, header=True)
    assert response._header.correlation_id == 12
    assert response.error_code == 35


async def test_unknown_api_versions_version_falls_back_to_v0() -> None:
    async with running_server(api_versions_router()) as (_, address):
        async with await connect(address) as stream:
            await stream.send_all(framed(raw_header_v1(API_VERSIONS, 77, 13, "test")))
            frame = await read_frame(stream)
    # The body is a v0 ApiVersions response whatever version was asked.
    response = ApiVersionsResponse.decode(frame, version=0, header=True)
    assert response._header.correlation_id == 13
    assert response.error_code == 35
    assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [
        (API_VERSIONS, *codec.SUPPORTED_VERSIONS[API_VERSIONS])]


async def test_handler_failure_answers_unknown_server_error() -> None:
    router = RequestRouter()

    async def broken(request, ctx):
        raise RuntimeError("boom")

    router.register(LIST_GROUPS, broken)
    async with running_server(router) as (_, address):
        async with await connect(address) as stream:
            await stream.send_all(kafka_python_frame(ListGroupsRequest[0], 14))
            response = ListGroupsResponse.decode(await read_frame(stream), version=0,
                                                 header=True)
    assert response.error_code == -1


async def test_handler_sees_listener_peer_and_per_connection_scratch() -> None:
    router = RequestRouter()
    seen: list[tuple[str, str, int]] = []

    async def count_requests(request, ctx):
        ctx.scratch["count"] = ctx.scratch.get("count", 0) + 1
        seen.append((ctx.listener_name, ctx.peer[0], ctx.scratch["count"]))
        return {"error_code": 0, "groups": []}

    router.register(LIST_GROUPS, count_requests)
    async with running_server(router) as (_, address):
        for _ in range(2):
            async with await connect(address) as stream:
                for i in range(2):
                    await stream.send_all(kafka_python_frame(ListGroupsRequest[0], i))
                    assert await read_frame(stream) is not None
    assert seen == [("PLAINTEXT", "127.0.0.1", 1), ("PLAINTEXT", "127.0.0.1", 2)] * 2


async def test_idle_connection_is_closed() -> None:
    async with running_server(api_versions_router(), idle_timeout_s=0.3) as (_, address):
        async with await connect(address) as stream:
            started = trio.current_time()
            await assert_closed_by_server(stream)
            assert trio.current_time() - started >= 0.29


async def test_connection_with_pending_request_is_not_idle() -> None:
    router = RequestRouter()

    async def long_poll(request, ctx):
        await trio.sleep(0.8)  # a fetch long-poll outliving the idle timeout
        return {"error_code": 0, "api_keys": []}

    router.register(API_VERSIONS, long_poll)
    async with running_server(router, idle_timeout_s=0.3) as (_, address):
        async with await connect(address) as stream:
            await stream.send_all(api_versions_frame(21))
            frame = await read_frame(stream)
    assert frame is not None and decode_api_versions(frame)._header.correlation_id == 21


async def test_connections_beyond_max_connections_wait_until_one_closes(caplog) -> None:
    """As in Kafka, the acceptor holds new connections back at max.connections (they queue
    unaccepted) and serves them once a connection closes."""
    caplog.set_level(logging.WARNING, logger="broker.network")
    async with running_server(api_versions_router(), max_connections=2) as (server, address):
        first, second = await connect(address), await connect(address)
        for stream in (first, second):
            await stream.send_all(api_versions_frame(1))
            assert await read_frame(stream) is not None
        async with await connect(address) as extra:
            await extra.send_all(api_versions_frame(2))
            with trio.move_on_after(0.5) as waited:
                await read_frame(extra)
            assert waited.cancelled_caught, "a connection beyond max.connections was served"
            assert server.connection_count == 2
            assert any("max.connections" in r.getMessage() for r in caplog.records)
            await first.aclose()
            frame = await read_frame(extra)
            assert frame is not None and decode_api_versions(frame)._header.correlation_id == 2
        await second.aclose()


async def fetched_records(records: object, correlation_id: int = 31) -> bytes:
    """Serve one Fetch whose single partition carries `records`; the bytes the client got."""
    router = api_versions_router()

    async def fetch(request, ctx):
        return {"responses": [{"topic": "t", "partitions": [
            {"partition_index": 0, "records": records}]}]}

    router.register(FETCH, fetch)
    async with running_server(router) as (_, address):
        async with await connect(address) as stream:
            request = codec.encode_request(FETCH, 12, correlation_id, "test", {"topics": []})
            await stream.send_all(framed(request))
            frame = await read_frame(stream)
    answered_id, body = codec.decode_response(FETCH, 12, frame)
    assert answered_id == correlation_id
    return bytes(body["responses"][0]["partitions"][0]["records"])


@pytest.mark.parametrize("size", [300_000, 700])
async def test_file_range_records_are_sent_from_the_file(tmp_path, size) -> None:
    """A large range by sendfile, a small one read and sent with the bytes around it."""
    payload = os.urandom(size)
    path = tmp_path / "segment.log"
    path.write_bytes(b"H" * 17 + payload + b"T" * 5)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert await fetched_records(FileRange(fd, 17, len(payload))) == payload
    finally:
        os.close(fd)


async def test_failed_file_send_ends_only_that_connection(tmp_path, caplog) -> None:
    """A segment closed under a response (its topic was just deleted) breaks one client only."""
    path = tmp_path / "segment.log"
    path.write_bytes(os.urandom(1000))
    fd = os.open(path, os.O_RDONLY)
    os.close(fd)  # the response below points at a file descriptor that is gone
    router = api_versions_router()

    async def fetch(request, ctx):
        return {"responses": [{"topic": "t", "partitions": [
            {"partition_index": 0, "records": FileRange(fd, 0, 1000)}]}]}

    router.register(FETCH, fetch)
    async with running_server(router) as (_, address):
        async with await connect(address) as stream:
            request = codec.encode_request(FETCH, 12, 5, "test", {"topics": []})
            await stream.send_all(framed(request))
            with trio.fail_after(10):
                while await read_frame(stream) is not None:
                    pass  # whatever was sent before the failure; then the server closes
        await assert_connection_works(address)
    assert any("failed; closing it" in r.getMessage() for r in caplog.records)


async def test_stop_finishes_in_flight_requests_and_refuses_new_connections() -> None:
    release = trio.Event()
    entered = trio.Event()
    router = RequestRouter()

    async def pending(request, ctx):
        entered.set()
        await release.wait()
        return {"error_code": 0, "api_keys": []}

    router.register(API_VERSIONS, pending)
    server = NetworkServer([Listener("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT")], router,
                           ServerSettings(shutdown_grace_s=10))
    async with trio.open_nursery() as nursery:
        address = (await nursery.start(server.serve))["PLAINTEXT"]
        stream = await connect(address)
        await stream.send_all(api_versions_frame(41))
        await entered.wait()
        server.stop()
        with trio.fail_after(5):
            while True:
                try:
                    probe = await trio.open_tcp_stream(*address)
                except OSError:
                    break
                await probe.aclose()
                await trio.sleep(0.01)
        release.set()
        frame = await read_frame(stream)
        assert frame is not None and decode_api_versions(frame)._header.correlation_id == 41
        await assert_closed_by_server(stream)
        await stream.aclose()


async def test_bind_conflict_fails_with_the_listener_named() -> None:
    async with running_server(api_versions_router()) as (_, address):
        clash = NetworkServer([Listener("EXTERNAL", "127.0.0.1", address[1], "PLAINTEXT")],
                              api_versions_router())
        with pytest.raises(OSError, match="EXTERNAL://127.0.0.1"), trio.fail_after(5):
            await clash.serve()


async def test_pinned_file_range_sends_its_segment_after_the_log_closes_it(tmp_path) -> None:
    """The log may close a segment while a fetch response still waits to be sent; a pinned
    range keeps sending that segment's bytes even when another file reuses the number."""
    payload = os.urandom(200_000)
    path = tmp_path / "segment.log"
    path.write_bytes(payload)
    fd = os.open(path, os.O_RDONLY)
    pinned = FileRange.pinned(fd, 0, len(payload))
    own = pinned.fd
    os.close(fd)
    other = tmp_path / "other.log"
    other.write_bytes(b"X" * len(payload))
    reused = os.open(other, os.O_RDONLY)  # likely takes the number just freed
    try:
        assert await fetched_records(pinned) == payload
    finally:
        os.close(reused)
    del pinned
    gc.collect()
    with pytest.raises(OSError):
        os.fstat(own)  # the duplicate is closed once nothing refers to the range


async def test_socket_buffer_settings_size_accepted_connections() -> None:
    sizes = {"send_buffer_bytes": 40960, "receive_buffer_bytes": 53248}
    async with running_server(api_versions_router(), **sizes) as (server, address):
        async with await connect(address) as stream:
            await stream.send_all(api_versions_frame(1))
            assert await read_frame(stream) is not None
            (accepted,) = server._connections
            sock = accepted._stream.socket
            # Linux reports twice the size asked for (its bookkeeping overhead).
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) in (40960, 2 * 40960)
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) in (53248, 2 * 53248)


async def test_connections_beyond_max_connections_per_ip_are_closed(caplog) -> None:
    caplog.set_level(logging.INFO, logger="broker.network")
    async with running_server(api_versions_router(),
                              max_connections_per_ip=1) as (server, address):
        async with await connect(address) as first:
            await first.send_all(api_versions_frame(1))
            assert await read_frame(first) is not None
            async with await connect(address) as second:
                await assert_closed_by_server(second)
        with trio.fail_after(5):
            while server.connection_count:
                await trio.sleep(0.01)
        await assert_connection_works(address)
    assert any("max.connections.per.ip" in r.getMessage() for r in caplog.records)


async def test_a_stalled_half_request_is_closed_after_the_read_timeout(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="broker.network")
    async with running_server(api_versions_router(), request_read_timeout_s=0.3,
                              idle_timeout_s=30) as (_, address):
        async with await connect(address) as stalled:
            await stalled.send_all(api_versions_frame(1)[:7])
            started = trio.current_time()
            await assert_closed_by_server(stalled)
            assert 0.29 <= trio.current_time() - started < 2
        await assert_connection_works(address)
    assert any("raftka.socket.request.read.timeout.ms" in r.getMessage()
               for r in caplog.records)


def _sleeping_router(parks: bool) -> RequestRouter:
    """ListGroups waits a second (parking first when `parks`, as a long poll does)."""
    from broker import parking

    router = api_versions_router()

    async def list_groups(request, ctx):  # type: ignore[no-untyped-def]
        if parks:
            parking.parked()
        await trio.sleep(1.0)
        return {"error_code": 0, "groups": []}

    router.register(LIST_GROUPS, list_groups)
    return router


@pytest.mark.parametrize("parks", [True, False])
async def test_a_full_backlog_stops_reading_but_parked_requests_leave_it(parks: bool) -> None:
    """queued.max.requests bounds the requests read and not yet handled: with it full of
    busy requests the next one waits; requests that park give their place back."""
    async with running_server(_sleeping_router(parks), queued_max_requests=2) as (_, address):
        busy = [await connect(address) for _ in range(3)]
        for i, stream in enumerate(busy):
            await stream.send_all(kafka_python_frame(ListGroupsRequest[0], i))
        await trio.sleep(0.1)
        started = trio.current_time()
        await assert_connection_works(address)
        waited = trio.current_time() - started
        if parks:
            assert waited < 0.5
        else:
            assert waited > 0.5, "a request was read while the backlog was full"
        for stream in busy:
            assert await read_frame(stream) is not None
            await stream.aclose()


async def test_the_inter_broker_listener_gets_in_past_max_connections_by_closing_another(
        ) -> None:
    """Kafka's protected listener: with the node at max.connections, a connection to the
    inter-broker listener is accepted and the least recently active connection of another
    listener is closed."""
    listeners = [Listener("CLIENT", "127.0.0.1", 0, "PLAINTEXT"),
                 Listener("INTERNAL", "127.0.0.1", 0, "PLAINTEXT")]
    server = NetworkServer(listeners, api_versions_router(),
                           ServerSettings(shutdown_grace_s=2.0, max_connections=2,
                                          inter_broker_listener="INTERNAL"))
    async with trio.open_nursery() as nursery:
        addresses = await nursery.start(server.serve)
        try:
            older, newer = await connect(addresses["CLIENT"]), await connect(addresses["CLIENT"])
            await older.send_all(api_versions_frame(1))
            assert await read_frame(older) is not None
            await trio.sleep(0.05)
            await newer.send_all(api_versions_frame(2))
            assert await read_frame(newer) is not None
            async with await connect(addresses["INTERNAL"]) as internal:
                await internal.send_all(api_versions_frame(3))
                assert await read_frame(internal) is not None
                await assert_closed_by_server(older)
                await newer.send_all(api_versions_frame(4))
                assert await read_frame(newer) is not None
            await older.aclose()
            await newer.aclose()
        finally:
            server.stop()
