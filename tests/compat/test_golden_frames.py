"""Real clients (kafka-python, confluent-kafka) against a loopback server using our codec.

The server answers with frames our codec encodes; the frames the clients send must decode
with our codec to what the clients were asked to do, and re-encode to the same bytes.
"""

from __future__ import annotations

import time
from typing import Iterator

import pytest

from clients.protocol import ApiKey, encode_request
from clients.records.header import iter_batches
from tests.compat.golden_server import FETCH_VALUE, TOPIC, Captured, GoldenServer

DEADLINE_S = 20.0


@pytest.fixture
def server() -> Iterator[GoldenServer]:
    srv = GoldenServer()
    srv.start()
    try:
        yield srv
    finally:
        srv.close()


def assert_reencodes_identically(captured: Captured) -> None:
    request = captured.request
    again = encode_request(request.api_key, request.api_version, request.correlation_id,
                           request.client_id, request.body)
    assert again == captured.frame


def check_handshake(server: GoldenServer, client_id: str, software: tuple[str, str]) -> None:
    """``software``: the client's expected ApiVersions v3 name and version prefix."""
    versions = server.requests(ApiKey.API_VERSIONS, client_id)
    assert versions, "no ApiVersions request"
    last = versions[-1].request
    assert 0 <= last.api_version <= 3
    if last.api_version >= 3:
        assert last.body.client_software_name == software[0]
        assert last.body.client_software_version.startswith(software[1])
    assert_reencodes_identically(versions[-1])
    metadata = server.requests(ApiKey.METADATA, client_id)
    assert metadata, "no Metadata request"
    requested = [[t.name for t in c.request.body.topics] if c.request.body.topics is not None
                 else None for c in metadata]
    assert [TOPIC] in requested, requested
    for c in metadata:
        assert_reencodes_identically(c)


def check_produce(server: GoldenServer, client_id: str, key: bytes, value: bytes) -> None:
    produce = server.requests(ApiKey.PRODUCE, client_id)
    assert produce, "no Produce request"
    captured = produce[0]
    body = captured.request.body
    assert 3 <= captured.request.api_version <= 9
    assert body.acks == 1
    [topic] = body.topic_data
    assert topic.name == TOPIC
    [partition] = topic.partition_data
    assert partition.index == 0
    records = partition.records
    assert isinstance(records, memoryview)
    [(_, header)] = list(iter_batches(records))
    assert header.records_count == 1 and header.magic == 2
    assert bytes(records).find(value) > 0 and bytes(records).find(key) > 0
    assert_reencodes_identically(captured)


def check_fetch(server: GoldenServer, client_id: str) -> None:
    fetch = server.requests(ApiKey.FETCH, client_id)
    assert fetch, "no Fetch request"
    captured = fetch[0]
    body = captured.request.body
    assert 4 <= captured.request.api_version <= 12
    assert body.replica_id == -1
    [topic] = body.topics
    assert topic.topic == TOPIC
    [partition] = topic.partitions
    assert partition.partition == 0 and partition.fetch_offset == 0
    assert_reencodes_identically(captured)


def test_kafka_python_producer_frames(server: GoldenServer) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{server.port}", client_id="kp-producer",
                             acks=1, linger_ms=0, request_timeout_ms=10000, max_block_ms=10000)
    try:
        producer.send(TOPIC, key=b"kp-key", value=b"kp-value", partition=0).get(timeout=DEADLINE_S)
    finally:
        producer.close(timeout=5)
    import kafka

    check_handshake(server, "kp-producer", ("kafka-python", kafka.__version__))
    check_produce(server, "kp-producer", b"kp-key", b"kp-value")


def test_kafka_python_consumer_frames(server: GoldenServer) -> None:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{server.port}", client_id="kp-consumer",
                             group_id=None, enable_auto_commit=False, request_timeout_ms=10000)
    try:
        partition = TopicPartition(TOPIC, 0)
        consumer.assign([partition])
        consumer.seek(partition, 0)
        deadline = time.monotonic() + DEADLINE_S
        values: list[bytes] = []
        while not values and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                values.extend(r.value for r in records)
        assert values == [FETCH_VALUE]
    finally:
        consumer.close()
    assert server.requests(ApiKey.API_VERSIONS, "kp-consumer")
    check_fetch(server, "kp-consumer")


def test_confluent_kafka_producer_frames(server: GoldenServer) -> None:
    import confluent_kafka
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": f"127.0.0.1:{server.port}", "client.id": "ck-producer",
                         "acks": 1, "linger.ms": 0, "message.timeout.ms": 15000})
    delivered: list[object] = []
    producer.produce(TOPIC, key=b"ck-key", value=b"ck-value", partition=0,
                     on_delivery=lambda err, msg: delivered.append(err or msg))
    remaining = producer.flush(DEADLINE_S)
    assert remaining == 0 and len(delivered) == 1
    assert not isinstance(delivered[0], Exception) and delivered[0].error() is None  # type: ignore[attr-defined]
    check_handshake(server, "ck-producer", ("confluent-kafka-python", confluent_kafka.version()[0]))
    check_produce(server, "ck-producer", b"ck-key", b"ck-value")


def test_confluent_kafka_consumer_frames(server: GoldenServer) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{server.port}", "client.id": "ck-consumer",
                         "group.id": "golden-group", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        deadline = time.monotonic() + DEADLINE_S
        message = None
        while message is None and time.monotonic() < deadline:
            polled = consumer.poll(0.2)
            if polled is not None and polled.error() is None:
                message = polled
        assert message is not None, "no message consumed"
        assert message.value() == FETCH_VALUE
    finally:
        consumer.close()
    assert server.requests(ApiKey.API_VERSIONS, "ck-consumer")
    check_fetch(server, "ck-consumer")
