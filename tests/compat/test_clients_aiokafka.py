"""aiokafka against a launcher cluster: idempotent acks=all produce of 10k keyed records
with headers per codec, then assign+seek consumption checking every byte and offset."""

from __future__ import annotations

import asyncio

import pytest

from tests.compat.cluster import Cluster

aiokafka = pytest.importorskip("aiokafka")

RECORDS = 10_000
CODECS = [None, "gzip", "lz4", "snappy", "zstd"]


def expected(codec: str | None, i: int) -> tuple[bytes, bytes, list[tuple[str, bytes]]]:
    return (f"key-{codec}-{i}".encode(), f"value-{codec}-{i}-".encode() * (1 + i % 3),
            [("i", str(i).encode()), ("c", str(codec).encode())])


async def produce_all(bootstrap: str, topic: str, codec: str | None) -> list[int]:
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all",
                                         enable_idempotence=True, compression_type=codec,
                                         linger_ms=5)
    await producer.start()
    try:
        futures = []
        for i in range(RECORDS):
            key, value, headers = expected(codec, i)
            futures.append(await producer.send(topic, value=value, key=key, headers=headers,
                                               partition=0))
        return [(await f).offset for f in futures]
    finally:
        await producer.stop()


async def consume_all(bootstrap: str, topic: str, start: int = 0) -> list:
    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                         enable_auto_commit=False)
    await consumer.start()
    try:
        tp = aiokafka.TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, start)
        messages: list = []

        async def drain() -> None:
            while len(messages) < RECORDS - start:
                polled = await consumer.getmany(timeout_ms=500, max_records=5000)
                for batch in polled.values():
                    messages.extend(batch)

        await asyncio.wait_for(drain(), 30)
    finally:
        await consumer.stop()
    return messages


@pytest.mark.parametrize("codec", CODECS)
def test_aiokafka_round_trip(cluster: Cluster, codec: str | None) -> None:
    topic = f"aiokafka-{codec}"
    cluster.create_topic(topic)
    offsets = asyncio.run(produce_all(cluster.bootstrap, topic, codec))
    assert offsets == list(range(RECORDS))
    messages = asyncio.run(consume_all(cluster.bootstrap, topic))
    assert [m.offset for m in messages] == list(range(RECORDS))
    for i, msg in enumerate(messages):
        key, value, headers = expected(codec, i)
        assert (msg.key, msg.value, list(msg.headers)) == (key, value, headers)
    tail = asyncio.run(consume_all(cluster.bootstrap, topic, start=9_990))
    assert [m.offset for m in tail] == list(range(9_990, RECORDS))
