"""Timed confluent-kafka runs shared by `scripts/bench`'s one-node modes (rf1, tls, clients):
produce N records, consume the first N of a partition, the broker CPU a run used, and the
median of several rounds."""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any, Iterator, Mapping

import confluent_kafka

from scripts.benchmarks.cluster import percentiles_ms
from scripts.benchmarks.node_cpu import cpu_seconds

VALUE = b"x" * 100
# librdkafka stops fetching once `queued.min.messages` are buffered and then waits
# `fetch.queue.backoff.ms` (1000 ms by default in 2.x): a fast consumer would mostly measure
# that timer.
CONSUMER_CONFIG = {"group.id": "bench", "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                   "fetch.queue.backoff.ms": 10}


@contextmanager
def broker_cpu(pid: int | None, into: dict[str, Any]) -> Iterator[None]:
    """Put the CPU seconds `pid` uses inside the block into `into["broker_cpu_s"]`."""
    before = cpu_seconds(pid)
    yield
    after = cpu_seconds(pid)
    into["broker_cpu_s"] = (round(after - before, 2) if before is not None and after is not None
                            else None)


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median records/s, plus the list of every run's records/s."""
    ranked = sorted(runs, key=lambda r: r["records_per_s"] or 0)
    return {**ranked[(len(ranked) - 1) // 2], "runs": [r["records_per_s"] for r in runs]}


def produce(bootstrap: str, topic: str, count: int, acks: str, partition: int = 0,
            extra: Mapping[str, Any] | None = None, keyed: bool = False) -> dict[str, Any]:
    """records/s, MB/s and p50/p99 delivery latency (ms) of `count` records (with `keyed`,
    each carries one of 100000 8-byte keys)."""
    latencies: list[float] = []
    failed = [0]

    def delivered(err: Any, msg: Any) -> None:
        if err is None:
            latencies.append(msg.latency())
        else:
            failed[0] += 1

    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": acks,
                                         "linger.ms": 5, "enable.idempotence": acks == "all",
                                         **(extra or {})})
    producer.produce(topic, VALUE, b"warm-up" if keyed else None, partition=partition,
                     on_delivery=delivered)
    producer.flush(30)  # connection and metadata set up outside the timing
    latencies.clear()
    keys: list[bytes | None] = [b"%08d" % i for i in range(100_000)] if keyed else [None]
    started = time.perf_counter()
    for i in range(count):
        key = keys[i % len(keys)]
        while True:
            try:
                producer.produce(topic, VALUE, key, partition=partition, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.001)
        producer.poll(0)
    producer.flush(120)
    elapsed = time.perf_counter() - started
    return {"records_per_s": round(count / elapsed),
            "mb_per_s": round(count * 100 / elapsed / 1e6, 1),
            **percentiles_ms(latencies),
            "failed": failed[0]}


def consume(bootstrap: str, topic: str, count: int,
            extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """records/s and MB/s of a fresh consumer reading the first `count` records of partition
    0 by assign, timed from its first batch."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, **CONSUMER_CONFIG,
                                         **(extra or {})})
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    seen = 0
    started = None
    deadline = time.monotonic() + 120
    while seen < count and time.monotonic() < deadline:
        batch = consumer.consume(10_000, timeout=1.0)
        if started is None and batch:
            started = time.perf_counter()
        seen += sum(1 for m in batch if m.error() is None)
    elapsed = time.perf_counter() - (started or time.perf_counter())
    consumer.close()
    return {"records_per_s": round(seen / elapsed) if elapsed else None,
            "mb_per_s": round(seen * 100 / elapsed / 1e6, 1) if elapsed else None,
            "records": seen}
