"""Decode batches written by librdkafka (confluent-kafka), captured off a real socket.

A minimal stand-in broker answers ApiVersions and Metadata, then takes the records bytes out
of the first Produce request (acks=0, so no reply is due).
"""

from __future__ import annotations

import struct
from typing import Callable

import pytest
import trio
from confluent_kafka import Producer

from clients.records import compression
from clients.records.batch import RecordBatch, iter_record_batches
from clients.varint import encode_unsigned_varint

TOPIC = "interop"
NODE_ID = 1
API_PRODUCE, API_FETCH, API_METADATA, API_FIND_COORDINATOR, API_API_VERSIONS = 0, 1, 3, 10, 18
# librdkafka's MsgVersion 2 needs Produce v3 and Fetch v4; its LZ4 feature needs FindCoordinator.
SUPPORTED = [
    (API_PRODUCE, 3, 7),  # v7+ lets librdkafka use zstd; v3-v8 requests share one layout
    (API_FETCH, 4, 10),  # with Produce v7, Fetch v10 enables librdkafka's zstd feature
    (API_METADATA, 1, 1),
    (API_FIND_COORDINATOR, 0, 0),
    (API_API_VERSIONS, 0, 3),
]


def kstring(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def api_versions_response(version: int) -> bytes:
    if version >= 3:  # flexible: compact array, tagged fields
        body = struct.pack(">h", 0) + encode_unsigned_varint(len(SUPPORTED) + 1)
        body += b"".join(struct.pack(">hhh", *api) + b"\x00" for api in SUPPORTED)
        return body + struct.pack(">i", 0) + b"\x00"
    body = struct.pack(">hi", 0, len(SUPPORTED)) + b"".join(struct.pack(">hhh", *a) for a in SUPPORTED)
    return body + (struct.pack(">i", 0) if version >= 1 else b"")


def metadata_v1_response(port: int) -> bytes:
    brokers = struct.pack(">i", 1) + struct.pack(">i", NODE_ID) + kstring("127.0.0.1")
    brokers += struct.pack(">ih", port, -1)  # port, null rack
    partition = struct.pack(">hiii", 0, 0, NODE_ID, 1) + struct.pack(">i", NODE_ID)
    partition += struct.pack(">ii", 1, NODE_ID)  # isr
    topic = struct.pack(">h", 0) + kstring(TOPIC) + b"\x00" + struct.pack(">i", 1) + partition
    return brokers + struct.pack(">i", NODE_ID) + struct.pack(">i", 1) + topic


def produce_records(body: bytes) -> bytes:
    """The records bytes of the first partition of a Produce v3 request body."""
    pos = 0
    (txn_len,) = struct.unpack_from(">h", body, pos)
    pos += 2 + max(txn_len, 0) + 2 + 4  # transactional id, acks, timeout
    pos += 4  # topics count
    (name_len,) = struct.unpack_from(">h", body, pos)
    pos += 2 + name_len + 4 + 4  # name, partitions count, partition index
    (size,) = struct.unpack_from(">i", body, pos)
    return body[pos + 4 : pos + 4 + size]


async def receive_exactly(stream: trio.SocketStream, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = await stream.receive_some(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return bytes(data)


async def serve_connection(
    stream: trio.SocketStream, port: int, captured: trio.MemorySendChannel[bytes]
) -> None:
    async with stream:
        try:
            while True:
                (size,) = struct.unpack(">i", await receive_exactly(stream, 4))
                request = await receive_exactly(stream, size)
                api_key, version, correlation_id, client_len = struct.unpack_from(">hhih", request)
                pos = 10 + max(client_len, 0)
                if api_key == API_API_VERSIONS:
                    body = api_versions_response(version)
                elif api_key == API_METADATA:
                    body = metadata_v1_response(port)
                elif api_key == API_PRODUCE:
                    await captured.send(produce_records(request[pos:]))
                    continue
                else:
                    return
                response = struct.pack(">i", correlation_id) + body
                await stream.send_all(struct.pack(">i", len(response)) + response)
        except (EOFError, trio.BrokenResourceError, trio.ClosedResourceError):
            return


def produce(port: int, codec: str, messages: list[tuple[bytes | None, bytes, list, int]]) -> None:
    producer = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "compression.type": codec,
            "acks": 0,
            "linger.ms": 100,
            "enable.idempotence": False,
            "api.version.request": True,
            "socket.timeout.ms": 10000,
        }
    )
    for key, value, headers, timestamp in messages:
        producer.produce(TOPIC, value=value, key=key, headers=headers, timestamp=timestamp, partition=0)
    remaining = producer.flush(15)
    assert remaining == 0


async def capture_batches(codec: str, messages: list) -> list[RecordBatch]:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    send, receive = trio.open_memory_channel[bytes](10)

    async def handler(stream: trio.SocketStream) -> None:
        await serve_connection(stream, port, send)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.serve_listeners, handler, listeners)
        produced = trio.to_thread.run_sync(produce, port, codec, messages)
        nursery.start_soon(lambda: produced)
        with trio.fail_after(20):
            records = await receive.receive()
        nursery.cancel_scope.cancel()
    return list(iter_record_batches(records))


CODECS: dict[str, Callable[[], bool]] = {
    "none": lambda: True,
    "gzip": lambda: True,
    "lz4": lambda: True,
    "snappy": lambda: compression.is_available(compression.SNAPPY),
    "zstd": lambda: compression.is_available(compression.ZSTD),
}


@pytest.mark.parametrize("codec", list(CODECS))
async def test_we_decode_librdkafka_batches(codec: str) -> None:
    if not CODECS[codec]():
        pytest.skip(f"{codec} package not installed")
    messages = [
        (b"key-%d" % i if i % 4 else None, b"value %d " % i * 40, [("idx", b"%d" % i)], 1_700_000_000_000 + i)
        for i in range(25)
    ]
    batches = await capture_batches(codec, messages)
    records = [record for batch in batches for record in batch.records]
    assert all(b.header.compression == compression.codec_from_name(codec) for b in batches)
    assert [(r.key, r.value, r.headers, r.timestamp) for r in records] == [
        (key, value, tuple(headers), ts) for key, value, headers, ts in messages
    ]
    assert [r.offset for r in records] == list(range(len(messages)))
