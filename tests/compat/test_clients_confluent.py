"""confluent-kafka (librdkafka) against the broker data plane: idempotent acks=all produce
of 10k keyed records with headers per codec, then assign+seek consumption of every byte."""

from __future__ import annotations

import pytest
import trio

from tests.unit.dataplane.harness import counting_producer_ids, running_broker

confluent_kafka = pytest.importorskip("confluent_kafka")

RECORDS = 10_000
CODECS = ["none", "gzip", "lz4", "snappy", "zstd"]


def expected(codec: str, i: int) -> tuple[bytes, bytes, list[tuple[str, bytes]]]:
    return (f"key-{codec}-{i}".encode(), f"value-{codec}-{i}-".encode() * (1 + i % 7),
            [("h1", f"{i}".encode()), ("codec", codec.encode())])


def produce_all(bootstrap: str, topic: str, codec: str) -> list[int]:
    producer = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
        "compression.type": codec, "linger.ms": 5, "broker.address.family": "v4"})
    offsets: list[int] = []
    errors: list[object] = []

    def delivered(err, msg) -> None:  # type: ignore[no-untyped-def]
        if err is not None:
            errors.append(err)
        else:
            offsets.append(msg.offset())

    for i in range(RECORDS):
        key, value, headers = expected(codec, i)
        while True:
            try:
                producer.produce(topic, value, key, partition=0, headers=headers, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(30) == 0
    assert not errors, errors[:3]
    return offsets


def consume_all(bootstrap: str, topic: str) -> list[object]:
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": "compat-confluent",
        "enable.auto.commit": False, "broker.address.family": "v4"})
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    messages: list[object] = []
    deadline_polls = 300
    while len(messages) < RECORDS and deadline_polls:
        batch = consumer.consume(1000, timeout=0.5)
        if not batch:
            deadline_polls -= 1
        for msg in batch:
            assert msg.error() is None, msg.error()
            messages.append(msg)
    consumer.close()
    return messages


@pytest.mark.parametrize("codec", CODECS)
async def test_confluent_round_trip(tmp_path, codec):
    async with running_broker(tmp_path, with_metadata=True,
                              producer_id_source=counting_producer_ids()) as broker:
        topic = f"confluent-{codec}"
        broker.create_topic(topic)
        bootstrap = f"{broker.host}:{broker.port}"
        with trio.fail_after(60):
            offsets = await trio.to_thread.run_sync(produce_all, bootstrap, topic, codec)
            assert sorted(offsets) == list(range(RECORDS))
            messages = await trio.to_thread.run_sync(consume_all, bootstrap, topic)
        assert [m.offset() for m in messages] == list(range(RECORDS))
        for i, msg in enumerate(messages):
            key, value, headers = expected(codec, i)
            assert (msg.key(), msg.value(), msg.headers()) == (key, value, headers)
