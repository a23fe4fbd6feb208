"""kafka-python with its defaults (idempotent producer, acks=all) against a launcher
cluster: 10k keyed records with headers per codec, then assign+seek consumption checking
every byte and offset."""

from __future__ import annotations

import time

import pytest

from tests.compat.cluster import Cluster

kafka = pytest.importorskip("kafka")

RECORDS = 10_000
CODECS = [None, "gzip", "lz4", "snappy", "zstd"]


def expected(codec: str | None, i: int) -> tuple[bytes, bytes, list[tuple[str, bytes]]]:
    return (f"key-{codec}-{i}".encode(), f"value-{codec}-{i}-".encode() * (1 + i % 5),
            [("n", str(i).encode())])


def produce_all(bootstrap: str, topic: str, codec: str | None) -> list[int]:
    # Only the codec is set: idempotence and acks=all are kafka-python's own defaults.
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, compression_type=codec)
    try:
        futures = []
        for i in range(RECORDS):
            key, value, headers = expected(codec, i)
            futures.append(producer.send(topic, value=value, key=key, headers=headers,
                                         partition=0))
        producer.flush(30)
        return [f.get(timeout=30).offset for f in futures]
    finally:
        producer.close()


def consume_all(bootstrap: str, topic: str, start: int = 0) -> list[object]:
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                   enable_auto_commit=False)
    try:
        tp = kafka.TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, start)
        messages: list[object] = []
        deadline = time.monotonic() + 30
        while len(messages) < RECORDS - start and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500, max_records=5000).values():
                messages.extend(batch)
    finally:
        consumer.close()
    return messages


def test_producer_defaults_are_idempotent_acks_all() -> None:
    defaults = kafka.KafkaProducer.DEFAULT_CONFIG
    assert defaults["enable_idempotence"] is True
    assert str(defaults["acks"]) in ("all", "-1")


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_round_trip(cluster: Cluster, codec: str | None) -> None:
    topic = f"kafka-python-{codec}"
    cluster.create_topic(topic)
    offsets = produce_all(cluster.bootstrap, topic, codec)
    assert offsets == list(range(RECORDS))
    messages = consume_all(cluster.bootstrap, topic)
    assert [m.offset for m in messages] == list(range(RECORDS))
    for i, msg in enumerate(messages):
        key, value, headers = expected(codec, i)
        assert (msg.key, msg.value, list(msg.headers)) == (key, value, headers)
    tail = consume_all(cluster.bootstrap, topic, start=5_001)
    assert [m.offset for m in tail] == list(range(5_001, RECORDS))
