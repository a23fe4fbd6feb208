"""Sequential synchronous commits: one confluent-kafka consumer reads a partition and commits
each record's offset with `commit(asynchronous=False)` before reading the next, the way an
application that must not reprocess a record commits. Each commit is an OffsetCommit the
coordinator answers once `__consumer_offsets` (replication 3, acks=all) holds it."""

from __future__ import annotations

import time
from typing import Any

import confluent_kafka

from scripts.benchmarks.cluster import percentiles_ms

WARM_UP = 50


def fill(bootstrap: str, topic: str, count: int) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for _ in range(count):
        producer.produce(topic, b"x" * 100, partition=0)
    if producer.flush(60):
        raise SystemExit(f"could not fill {topic} for the commit benchmark")


def sync_commit_rate(bootstrap: str, topic: str, commits: int,
                     group: str = "bench-sync-commit") -> dict[str, Any]:
    """Commits/s and p50/p99 commit latency of `commits` sequential synchronous commits, one
    after every record of partition 0 of `topic` (filled here)."""
    fill(bootstrap, topic, commits + WARM_UP)
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
        "fetch.wait.max.ms": 100, "fetch.queue.backoff.ms": 10})
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    latencies: list[float] = []
    done = 0
    started = 0.0
    deadline = time.monotonic() + 300
    try:
        while done < commits + WARM_UP:
            if time.monotonic() > deadline:
                raise SystemExit(f"only {done} synchronous commits within 300 s")
            message = consumer.poll(1.0)
            if message is None or message.error():
                continue
            if done == WARM_UP:
                started = time.perf_counter()
            sent = time.perf_counter()
            consumer.commit(message=message, asynchronous=False)
            if done >= WARM_UP:
                latencies.append(time.perf_counter() - sent)
            done += 1
        elapsed = time.perf_counter() - started
    finally:
        consumer.close()
    spread = percentiles_ms(latencies, digits=2)
    return {"sync_commits": commits, "sync_commits_per_s": round(commits / elapsed),
            "sync_commit_p50_ms": spread["p50_ms"], "sync_commit_p99_ms": spread["p99_ms"]}
