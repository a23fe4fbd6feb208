"""aiokafka against the broker data plane: idempotent acks=all produce of 10k keyed
records with headers per codec, then assign+seek consumption checking every byte."""

from __future__ import annotations

import asyncio

import pytest
import trio

from tests.unit.dataplane.harness import counting_producer_ids, running_broker

aiokafka = pytest.importorskip("aiokafka")

RECORDS = 10_000
CODECS = [None, "gzip", "lz4", "snappy", "zstd"]


def expected(codec: str | None, i: int) -> tuple[bytes, bytes, list[tuple[str, bytes]]]:
    return (f"key-{codec}-{i}".encode(), f"value-{codec}-{i}-".encode() * (1 + i % 3),
            [("i", str(i).encode()), ("c", str(codec).encode())])


async def produce_and_consume(bootstrap: str, topic: str, codec: str | None) -> tuple[list[int], list]:
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
        offsets = [(await f).offset for f in futures]
    finally:
        await producer.stop()
    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                         enable_auto_commit=False)
    await consumer.start()
    try:
        tp = aiokafka.TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        messages: list = []
        while len(messages) < RECORDS:
            polled = await asyncio.wait_for(consumer.getmany(timeout_ms=500, max_records=5000), 30)
            for batch in polled.values():
                messages.extend(batch)
    finally:
        await consumer.stop()
    return offsets, messages


@pytest.mark.parametrize("codec", CODECS)
async def test_aiokafka_round_trip(tmp_path, codec):
    async with running_broker(tmp_path, with_metadata=True,
                              producer_id_source=counting_producer_ids()) as broker:
        topic = f"aiokafka-{codec}"
        broker.create_topic(topic)
        bootstrap = f"{broker.host}:{broker.port}"
        with trio.fail_after(90):
            offsets, messages = await trio.to_thread.run_sync(
                asyncio.run, produce_and_consume(bootstrap, topic, codec))
        assert offsets == list(range(RECORDS))
        assert [m.offset for m in messages] == list(range(RECORDS))
        for i, msg in enumerate(messages):
            key, value, headers = expected(codec, i)
            assert (msg.key, msg.value, list(msg.headers)) == (key, value, headers)
