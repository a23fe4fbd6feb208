"""`scripts/bench --transactions`: transactional produce (a commit every 100 and every
10,000 records) next to plain idempotent produce, and read_committed consume next to
read_uncommitted, with confluent-kafka against one cluster, in the same run.

Rounds rotate the order of the produce modes (and of the two consumers) so load from other
processes hits them alike; each figure is the median round's.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import confluent_kafka

VALUE = b"x" * 100
# librdkafka waits fetch.queue.backoff.ms (1000 ms by default) once its queue is full.
CONSUMER_CONFIG = {"enable.auto.commit": False, "fetch.wait.max.ms": 100,
                   "fetch.queue.backoff.ms": 10}
CLUSTER_OVERRIDES = {"transaction.state.log.replication.factor": "1",
                     "transaction.state.log.min.isr": "1",
                     "transaction.state.log.num.partitions": "3"}


def produce(bootstrap: str, topic: str, count: int, per_transaction: int | None,
            transactional_id: str) -> dict[str, Any]:
    """records/s of `count` records, idempotent (acks=all), committed every
    `per_transaction` records when that is set."""
    config = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
              "linger.ms": 5, "broker.address.family": "v4"}
    if per_transaction:
        config["transactional.id"] = transactional_id
    producer = confluent_kafka.Producer(config)
    failed = [0]

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            failed[0] += 1

    if per_transaction:
        producer.init_transactions(60)
        producer.begin_transaction()
    producer.produce(topic, VALUE, partition=0, on_delivery=delivered)  # warm-up
    if per_transaction:
        producer.commit_transaction(60)
    else:
        producer.flush(30)
    transactions = 0
    started = time.perf_counter()
    sent = 0
    while sent < count:
        batch = min(per_transaction or count, count - sent)
        if per_transaction:
            producer.begin_transaction()
        for _ in range(batch):
            while True:
                try:
                    producer.produce(topic, VALUE, partition=0, on_delivery=delivered)
                    break
                except BufferError:
                    producer.poll(0.001)
            producer.poll(0)
        sent += batch
        if per_transaction:
            producer.commit_transaction(120)
            transactions += 1
    producer.flush(120)
    elapsed = time.perf_counter() - started
    return {"records_per_s": round(count / elapsed), "transactions": transactions,
            "failed": failed[0]}


def consume(bootstrap: str, topic: str, count: int, isolation: str) -> dict[str, Any]:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "bench",
                                         "isolation.level": isolation,
                                         "broker.address.family": "v4", **CONSUMER_CONFIG})
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    seen, started = 0, None
    deadline = time.monotonic() + 120
    while seen < count and time.monotonic() < deadline:
        batch = consumer.consume(10_000, timeout=1.0)
        if started is None and batch:
            started = time.perf_counter()
        seen += sum(1 for m in batch if m.error() is None)
    elapsed = time.perf_counter() - (started or time.perf_counter())
    consumer.close()
    return {"records_per_s": round(seen / elapsed) if elapsed else None, "records": seen}


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ranked = sorted(runs, key=lambda r: r["records_per_s"] or 0)
    return {**ranked[(len(ranked) - 1) // 2], "runs": [r["records_per_s"] for r in runs]}


def _ratio(a: dict[str, Any], b: dict[str, Any]) -> float | None:
    if not a["records_per_s"] or not b["records_per_s"]:
        return None
    return round(a["records_per_s"] / b["records_per_s"], 2)


def transactions_bench(bootstrap: str, records: int, rounds: int,
                       create_topic: Callable[[str], object]) -> dict[str, Any]:
    """One JSON-ready dict: produce per mode, consume per isolation level, and the ratios
    the issue sets goals for."""
    modes: dict[str, int | None] = {"idempotent": None, "txn_every_100": 100,
                                    "txn_every_10000": 10_000}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in modes}
    names = list(modes)
    for round_ in range(max(rounds, 1)):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            topic = f"bench-{name}-{round_}"
            create_topic(topic)
            runs[name].append(produce(bootstrap, topic, records, modes[name],
                                      f"bench-{name}-{round_}"))
    produced = {name: _median(r) for name, r in runs.items()}
    # Both transactional topics are read with each isolation level: markers every 101
    # offsets (commit every 100) are the hard case for read_committed.
    levels = ("read_uncommitted", "read_committed")
    consumed: dict[str, dict[str, Any]] = {}
    for name in ("txn_every_10000", "txn_every_100"):
        source = f"bench-{name}-0"
        consumed_runs: dict[str, list[dict[str, Any]]] = {level: [] for level in levels}
        for round_ in range(max(rounds, 1)):
            order = levels if round_ % 2 == 0 else levels[::-1]
            for level in order:
                consumed_runs[level].append(consume(bootstrap, source, records, level))
        medians = {level: _median(r) for level, r in consumed_runs.items()}
        consumed[name] = {**medians, "read_committed_vs_uncommitted": _ratio(
            medians["read_committed"], medians["read_uncommitted"])}
    return {"mode": "transactions", "records": records, "rounds": max(rounds, 1),
            "produce": produced,
            "txn_10000_vs_idempotent": _ratio(produced["txn_every_10000"],
                                              produced["idempotent"]),
            "txn_100_vs_idempotent": _ratio(produced["txn_every_100"], produced["idempotent"]),
            "consume": consumed}
