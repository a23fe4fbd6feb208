"""The benchmark's in-memory broker, driven by the real client the benchmark uses."""

from __future__ import annotations

import confluent_kafka
import trio

from scripts.benchmarks.memory_broker import serve


def produce_with_confluent(bootstrap: str, count: int) -> list[tuple[int, int]]:
    """(partition, offset) of each delivered record, in delivery order."""
    delivered: list[tuple[int, int]] = []
    errors: list[object] = []

    def on_delivery(err: object, msg: confluent_kafka.Message) -> None:
        if err is None:
            delivered.append((msg.partition(), msg.offset()))
        else:
            errors.append(err)

    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "1",
                                         "linger.ms": 5, "enable.idempotence": False,
                                         "message.timeout.ms": 20000})
    for i in range(count):
        producer.produce("bench", b"x" * 100, partition=i % 2, on_delivery=on_delivery)
    assert producer.flush(20) == 0
    assert errors == []
    return delivered


async def test_confluent_producer_gets_consecutive_offsets_per_partition() -> None:
    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(serve, "127.0.0.1", 0, 2)
        delivered = await trio.to_thread.run_sync(produce_with_confluent, f"{host}:{port}",
                                                  2000)
        nursery.cancel_scope.cancel()
    for partition in (0, 1):
        offsets = sorted(o for p, o in delivered if p == partition)
        assert offsets == list(range(1000))
