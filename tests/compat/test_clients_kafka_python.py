"""kafka-python against the broker data plane: idempotent acks=all produce of 10k keyed
records with headers per codec, then assign+seek consumption checking every byte."""

from __future__ import annotations

import pytest
import trio

from tests.unit.dataplane.harness import counting_producer_ids, running_broker

kafka = pytest.importorskip("kafka")

RECORDS = 10_000
CODECS = [None, "gzip", "lz4", "snappy", "zstd"]


def expected(codec: str | None, i: int) -> tuple[bytes, bytes, list[tuple[str, bytes]]]:
    return (f"key-{codec}-{i}".encode(), f"value-{codec}-{i}-".encode() * (1 + i % 5),
            [("n", str(i).encode())])


def produce_all(bootstrap: str, topic: str, codec: str | None) -> list[int]:
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all",
                                   enable_idempotence=True, compression_type=codec,
                                   linger_ms=5)
    futures = []
    for i in range(RECORDS):
        key, value, headers = expected(codec, i)
        futures.append(producer.send(topic, value=value, key=key, headers=headers, partition=0))
    producer.flush(30)
    offsets = [f.get(timeout=30).offset for f in futures]
    producer.close()
    return offsets


def consume_all(bootstrap: str, topic: str) -> list[object]:
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                   enable_auto_commit=False)
    tp = kafka.TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    messages: list[object] = []
    empty_polls = 0
    while len(messages) < RECORDS and empty_polls < 60:
        polled = consumer.poll(timeout_ms=500, max_records=5000)
        empty_polls += 0 if polled else 1
        for batch in polled.values():
            messages.extend(batch)
    consumer.close()
    return messages


@pytest.mark.parametrize("codec", CODECS)
async def test_kafka_python_round_trip(tmp_path, codec):
    async with running_broker(tmp_path, with_metadata=True,
                              producer_id_source=counting_producer_ids()) as broker:
        topic = f"kafka-python-{codec}"
        broker.create_topic(topic)
        bootstrap = f"{broker.host}:{broker.port}"
        with trio.fail_after(90):
            offsets = await trio.to_thread.run_sync(produce_all, bootstrap, topic, codec)
            assert offsets == list(range(RECORDS))
            messages = await trio.to_thread.run_sync(consume_all, bootstrap, topic)
        assert [m.offset for m in messages] == list(range(RECORDS))
        for i, msg in enumerate(messages):
            key, value, headers = expected(codec, i)
            assert (msg.key, msg.value, list(msg.headers)) == (key, value, headers)
