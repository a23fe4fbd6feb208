"""`scripts/bench --clients`: Raftka's blocking and trio clients next to confluent-kafka
against one node, taking turns each round: produce (acks=1, linger.ms=5), then consume the
first N records of the partition by assign; records/s of each."""

from __future__ import annotations

import time
from typing import Any, Callable

import trio

from clients.consumer import BlockingConsumer, Consumer
from clients.producer import BlockingProducer, open_producer
from scripts.benchmarks.confluent_runs import VALUE, consume, produce


def raftka_blocking_produce(bootstrap: str, topic: str, count: int) -> int:
    producer = BlockingProducer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5})
    producer.send(topic, VALUE, partition=0)
    producer.flush()  # connection and metadata set up outside the timing
    started = time.perf_counter()
    for _ in range(count):
        producer.send(topic, VALUE, partition=0)
    producer.flush()
    elapsed = time.perf_counter() - started
    producer.close()
    return round(count / elapsed)


def raftka_trio_produce(bootstrap: str, topic: str, count: int) -> int:
    async def run() -> float:
        async with open_producer({"bootstrap.servers": bootstrap, "acks": "1",
                                  "linger.ms": 5}) as producer:
            await producer.send_and_wait(topic, VALUE, partition=0)
            started = time.perf_counter()
            for _ in range(count):
                await producer.send(topic, VALUE, partition=0)
            await producer.flush()
            return time.perf_counter() - started
    return round(count / trio.run(run))


def raftka_blocking_consume(bootstrap: str, topic: str, count: int) -> int | None:
    with BlockingConsumer({"bootstrap.servers": bootstrap, "max.poll.records": 10_000}) as c:
        c.assign([(topic, 0)])
        c.seek((topic, 0), 0)
        seen, started = 0, None
        deadline = time.monotonic() + 120
        while seen < count and time.monotonic() < deadline:
            batch = c.poll(1000)
            if started is None and batch:
                started = time.perf_counter()
            seen += len(batch)
        return round(seen / (time.perf_counter() - started)) if started else None


def raftka_trio_consume(bootstrap: str, topic: str, count: int) -> int | None:
    async def run() -> int | None:
        async with Consumer({"bootstrap.servers": bootstrap,
                             "max.poll.records": 10_000}) as c:
            c.assign([(topic, 0)])
            c.seek((topic, 0), 0)
            seen, started = 0, None
            deadline = time.monotonic() + 120
            while seen < count and time.monotonic() < deadline:
                batch = await c.poll(1000)
                if started is None and batch:
                    started = time.perf_counter()
                seen += len(batch)
            return round(seen / (time.perf_counter() - started)) if started else None
    return trio.run(run)


def clients_bench(bootstrap: str, records: int, rounds: int) -> dict[str, Any]:
    """The three clients produce, then consume, taking turns each round."""
    producers: dict[str, Callable[[], int | None]] = {
        "confluent_kafka": lambda: produce(bootstrap, "bench", records, "1")["records_per_s"],
        "raftka_blocking": lambda: raftka_blocking_produce(bootstrap, "bench", records),
        "raftka_trio": lambda: raftka_trio_produce(bootstrap, "bench", records)}
    consumers: dict[str, Callable[[], int | None]] = {
        "confluent_kafka": lambda: consume(bootstrap, "bench", records)["records_per_s"],
        "raftka_blocking": lambda: raftka_blocking_consume(bootstrap, "bench", records),
        "raftka_trio": lambda: raftka_trio_consume(bootstrap, "bench", records)}
    result: dict[str, Any] = {"mode": "clients", "records": records, "rounds": max(rounds, 1)}
    for phase, clients in (("produce", producers), ("consume", consumers)):
        runs: dict[str, list[Any]] = {name: [] for name in clients}
        names = list(clients)
        for round_ in range(max(rounds, 1)):
            shift = round_ % len(names)
            for name in names[shift:] + names[:shift]:
                runs[name].append(clients[name]())
        medians = {name: sorted(r)[(len(r) - 1) // 2] for name, r in runs.items()}
        base = medians["confluent_kafka"]
        result[phase] = {**medians, "runs": runs, "vs_confluent_kafka": {
            name: round(medians[name] / base, 2) if base and medians[name] else None
            for name in names if name != "confluent_kafka"}}
    return result
