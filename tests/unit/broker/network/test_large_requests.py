"""Large requests (more than 1 MiB, not Produce): decoded and answered in a worker thread,
one at a time per server, while small requests on other connections are answered."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import trio
import trio.testing

import clients.protocol as protocol
from broker.apis.api_versions import install_api_versions
from broker.apis.request import RequestRouter
from broker.handled_alone import handled_alone
from broker.network.large_requests import LARGE_REQUEST_BYTES, MANY_PARTITIONS
from tests.unit.broker.network.test_server import api_versions_frame, decode_api_versions
from tests.unit.broker.network.wire import connect, read_frame, running_server

METADATA = 3
PRODUCE = 0
TOPICS = 150_000  # about 2.7 MB on the wire at v12 (within the default element bound)


class ThreadNotingCodec:
    """clients.protocol, noting which thread decoded and encoded each API."""

    def __init__(self) -> None:
        self.SUPPORTED_VERSIONS = protocol.SUPPORTED_VERSIONS
        self.ProtocolError = protocol.ProtocolError
        self.UnsupportedVersionError = protocol.UnsupportedVersionError
        self.threads: list[tuple[str, int, bool]] = []

    def decode_request(self, frame: Any, typed: bool | None = None,
                       max_elements: int | None = None) -> Any:
        request = protocol.decode_request(frame, typed, max_elements)
        self.threads.append(("decode", request.api_key, _on_main_thread()))
        return request

    def encode_response_chunks(self, api_key: int, api_version: int, correlation_id: int,
                               body: Any) -> Any:
        self.threads.append(("encode", api_key, _on_main_thread()))
        return protocol.encode_response_chunks(api_key, api_version, correlation_id, body)


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def large_metadata_frame(correlation_id: int) -> bytes:
    body = {"topics": [{"topic_id": uuid.UUID(int=0), "name": f"topic-{i:07d}"}
                       for i in range(TOPICS)],
            "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
    payload = protocol.encode_request(METADATA, 12, correlation_id, "big", body)
    assert len(payload) > LARGE_REQUEST_BYTES
    return len(payload).to_bytes(4, "big") + payload


def serving(router: RequestRouter, codec: ThreadNotingCodec) -> Any:
    return running_server(router, codec=codec)


async def test_large_requests_run_one_at_a_time_off_the_loop_while_small_ones_are_answered(
        ) -> None:
    router = RequestRouter()
    install_api_versions(router, protocol.SUPPORTED_VERSIONS)
    release = trio.Event()
    running = 0
    most_at_once = 0
    started = trio.Event()

    async def metadata(request: Any, ctx: Any) -> dict:
        nonlocal running, most_at_once
        running += 1
        most_at_once = max(most_at_once, running)
        started.set()
        await release.wait()
        running -= 1
        return {"throttle_time_ms": 0, "brokers": [], "cluster_id": None, "controller_id": -1,
                "topics": []}

    router.register(METADATA, metadata)
    codec = ThreadNotingCodec()
    frames = [large_metadata_frame(1), large_metadata_frame(2)]
    async with serving(router, codec) as (server, address):
        big = [await connect(address), await connect(address)]
        async with trio.open_nursery() as nursery:
            for stream, frame in zip(big, frames):
                nursery.start_soon(stream.send_all, frame)
        with trio.fail_after(60):
            await started.wait()
            # The other large request has arrived and waits for the lane.
            while server.large_requests.waiting < 1:
                await trio.sleep(0.01)
        # One large request is being handled: another client's small request is answered.
        async with await connect(address) as small:
            await small.send_all(api_versions_frame(9))
            with trio.fail_after(10):
                answer = decode_api_versions(await read_frame(small))
            assert answer._header.correlation_id == 9
        assert running == 1
        release.set()
        for stream in big:
            assert await read_frame(stream, timeout=60) is not None
            await stream.aclose()
    assert most_at_once == 1
    large = [(step, on_main) for step, api, on_main in codec.threads if api == METADATA]
    assert large == [("decode", False), ("encode", False)] * 2, large
    small = {on_main for step, api, on_main in codec.threads if api != METADATA}
    assert small == {True}


async def test_a_large_produce_is_decoded_off_the_loop_and_handled_alone() -> None:
    router = RequestRouter()
    release = trio.Event()
    running = 0
    most_at_once = 0

    async def produce(request: Any, ctx: Any) -> dict:
        nonlocal running, most_at_once
        running += 1
        most_at_once = max(most_at_once, running)
        await release.wait()
        running -= 1
        return {"responses": [], "throttle_time_ms": 0}

    router.register(PRODUCE, produce)
    codec = ThreadNotingCodec()
    body = {"transactional_id": None, "acks": 1, "timeout_ms": 1000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": b"\0" * (2 << 20)}]}]}
    payload = protocol.encode_request(PRODUCE, 9, 1, "big", body)
    async with serving(router, codec) as (server, address):
        streams = [await connect(address), await connect(address)]
        for stream in streams:
            await stream.send_all(len(payload).to_bytes(4, "big") + payload)
        with trio.fail_after(30):
            # One is handled, the other waits for the lane (its records may be appended
            # with checkpoints between them, so no two run at once).
            while running < 1 or server.large_requests.waiting < 1:
                await trio.sleep(0.01)
        release.set()
        for stream in streams:
            assert await read_frame(stream, timeout=30) is not None
            await stream.aclose()
    assert most_at_once == 1
    assert [(step, on_main) for step, api, on_main in codec.threads if api == PRODUCE] == [
        ("decode", False), ("encode", False)] * 2


async def test_a_request_naming_more_elements_than_the_bound_closes_its_connection(
        caplog: Any) -> None:
    router = RequestRouter()
    install_api_versions(router, protocol.SUPPORTED_VERSIONS)
    handled = []

    async def metadata(request: Any, ctx: Any) -> dict:
        handled.append(request)
        return {}

    router.register(METADATA, metadata)
    async with running_server(router, max_request_elements=TOPICS - 1) as (_, address):
        async with await connect(address) as stream:
            await stream.send_all(large_metadata_frame(1))
            assert await read_frame(stream, timeout=60) is None  # closed, not answered
        async with await connect(address) as other:  # the node serves the others
            await other.send_all(api_versions_frame(5))
            assert decode_api_versions(await read_frame(other))._header.correlation_id == 5
    assert handled == []
    assert any(f"METADATA v12 request names more than {TOPICS - 1} array elements" in r.message
               and "raftka.socket.request.max.elements" in r.message for r in caplog.records)


async def test_a_large_produce_naming_many_partitions_is_answered_off_the_loop() -> None:
    router = RequestRouter()

    async def produce(request: Any, ctx: Any) -> dict:
        return {"responses": [{"name": "t", "partition_responses": [
            {"index": p.index, "error_code": 3, "base_offset": -1, "log_append_time_ms": -1,
             "log_start_offset": -1, "record_errors": [], "error_message": None}
            for p in request.body.topic_data[0].partition_data]}], "throttle_time_ms": 0}

    router.register(PRODUCE, produce)
    codec = ThreadNotingCodec()
    body = {"transactional_id": None, "acks": 1, "timeout_ms": 1000, "topic_data": [
        {"name": "t", "partition_data": [{"index": p, "records": b"\0" * 1100}
                                         for p in range(MANY_PARTITIONS + 1)]}]}
    payload = protocol.encode_request(PRODUCE, 9, 1, "big", body)
    assert len(payload) > LARGE_REQUEST_BYTES
    async with serving(router, codec) as (server, address):
        async with await connect(address) as stream:
            await stream.send_all(len(payload).to_bytes(4, "big") + payload)
            assert await read_frame(stream, timeout=30) is not None
    assert [(step, on_main) for step, api, on_main in codec.threads if api == PRODUCE] == [
        ("decode", False), ("encode", False)]


async def test_a_produce_naming_many_partitions_is_handled_before_the_next_request_is_read(
        ) -> None:
    router = RequestRouter()
    events: list[str] = []

    async def produce(request: Any, ctx: Any) -> dict:
        partitions = len(request.body.topic_data[0].partition_data)
        events.append(f"start {partitions}")
        # Every other task runs until it blocks: a request read meanwhile would start here.
        await trio.testing.wait_all_tasks_blocked()
        events.append(f"end {partitions}")
        return {"responses": [], "throttle_time_ms": 0}

    router.register(PRODUCE, produce)

    def frame(correlation_id: int, partitions: int) -> bytes:
        body = {"transactional_id": None, "acks": 1, "timeout_ms": 1000, "topic_data": [
            {"name": "t", "partition_data": [{"index": p, "records": b"\0" * 8}
                                             for p in range(partitions)]}]}
        payload = protocol.encode_request(PRODUCE, 9, correlation_id, "many", body)
        return len(payload).to_bytes(4, "big") + payload

    async with running_server(router) as (_, address):
        async with await connect(address) as stream:
            await stream.send_all(frame(1, MANY_PARTITIONS + 1) + frame(2, 1))
            assert await read_frame(stream, timeout=30) is not None
            assert await read_frame(stream, timeout=30) is not None
    assert events == [f"start {MANY_PARTITIONS + 1}", f"end {MANY_PARTITIONS + 1}",
                      "start 1", "end 1"]


async def test_only_a_large_request_is_handled_alone() -> None:
    router = RequestRouter()
    seen: dict[int, bool] = {}

    async def produce(request: Any, ctx: Any) -> dict:
        seen[request.correlation_id] = handled_alone()
        return {"responses": [], "throttle_time_ms": 0}

    router.register(PRODUCE, produce)

    def frame(correlation_id: int, size: int) -> bytes:
        body = {"transactional_id": None, "acks": 1, "timeout_ms": 1000, "topic_data": [
            {"name": "t", "partition_data": [{"index": 0, "records": b"\0" * size}]}]}
        payload = protocol.encode_request(PRODUCE, 9, correlation_id, "c", body)
        return len(payload).to_bytes(4, "big") + payload

    async with running_server(router) as (_, address):
        async with await connect(address) as stream:
            await stream.send_all(frame(1, LARGE_REQUEST_BYTES + 1) + frame(2, 100))
            for _ in range(2):
                assert await read_frame(stream, timeout=30) is not None
    # The large one lets other connections run while it appends; the small one may not.
    assert seen == {1: True, 2: False}
