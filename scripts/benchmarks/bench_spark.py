"""`scripts/bench-spark`: the Spark connector's batch count and full read of a topic next to
a confluent-kafka baseline data source (`scripts.benchmarks.spark_baseline`), and the
produce-to-sink latency of a streaming query. The script's header lists the keys of its one
JSON line."""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

import confluent_kafka
from pyspark.sql import DataFrameReader, SparkSession

from clients.cli.main import OneLineParser, positive_int
from cluster.launcher import stop_quorum
from cluster.testing.waiting import wait_for
from scripts.benchmarks.cluster import create_topic, percentiles_ms, start_cluster
from scripts.benchmarks.spark_baseline import BaselineSource

TOPIC, PARTITIONS = "bench-spark", 4


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = OneLineParser(prog="scripts/bench-spark")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--records", type=positive_int, default=2_000_000)
    return parser.parse_args(argv)


def produce_topic(servers: str, records: int) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": servers, "linger.ms": 20,
                                         "batch.size": 1_000_000, "acks": 1,
                                         "queue.buffering.max.kbytes": 512_000})
    value = b"v" * 100
    for i in range(records):
        while True:
            try:
                producer.produce(TOPIC, value, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 50_000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def compare_sources(spark: SparkSession, servers: str, records: int) -> dict[str, float]:
    """Best-of-two seconds of count() and of a full-column read (Spark's noop sink) with the
    raftka source and with the baseline, after a warm-up count of each."""
    spark.dataSource.register(BaselineSource)
    raftka = (spark.read.format("raftka").option("kafka.bootstrap.servers", servers)
              .option("subscribe", TOPIC))
    baseline = (spark.read.format("confluent_baseline").option("bootstrap", servers)
                .option("topic", TOPIC).option("partitions", PARTITIONS))
    sources: tuple[tuple[str, DataFrameReader], ...] = (("raftka", raftka),
                                                        ("baseline", baseline))
    counts: dict[str, list[int]] = {"raftka": [], "baseline": []}
    results: dict[str, float] = {}
    # Warm-up: the first job of each source starts Python workers and imports modules.
    for label, reader in sources:
        counts[label].append(reader.load().count())
    # Best of two rounds, the sources taking turns, to shrug off noise from a busy machine.
    for label, reader in sources * 2:
        actions: tuple[tuple[str, Callable[[], object]], ...] = (
            ("count", lambda: counts[label].append(reader.load().count())),
            ("read", lambda: reader.load().write.format("noop").mode("overwrite").save()))
        for kind, action in actions:
            seconds = round(timed(action), 2)
            key = f"{label}_{kind}_s"
            results[key] = min(results.get(key, seconds), seconds)
    assert counts["raftka"] == counts["baseline"] == [records] * 3, counts
    return results


def streaming_latency(spark: SparkSession, servers: str, work: Path, seconds: float
                      ) -> dict[str, Any]:
    create_topic(int(servers.rsplit(":", 1)[1]), "latency-in", 1, 1)
    create_topic(int(servers.rsplit(":", 1)[1]), "latency-out", 1, 1)
    query = (spark.readStream.format("raftka").option("kafka.bootstrap.servers", servers)
             .option("subscribe", "latency-in").option("startingOffsets", "earliest").load()
             .select("value").writeStream.format("raftka")
             .option("kafka.bootstrap.servers", servers).option("topic", "latency-out")
             .option("checkpointLocation", str(work / "latency-checkpoint"))
             .trigger(processingTime="0 seconds").start())
    latencies: list[float] = []
    consumer = confluent_kafka.Consumer({"bootstrap.servers": servers, "group.id": "latency",
                                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["latency-out"])
    producer = confluent_kafka.Producer({"bootstrap.servers": servers, "linger.ms": 0})
    stop = threading.Event()

    def send() -> None:
        while not stop.is_set():
            producer.produce("latency-in", str(time.time()).encode())
            producer.poll(0)
            time.sleep(0.02)
        producer.flush(10)

    sender = threading.Thread(target=send)
    # Warm up: the first micro-batches start Python workers.
    wait_for(lambda: query.lastProgress is not None, "the latency query to start", 120)
    sender.start()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            latencies.append(time.time() - float(msg.value()))
    stop.set()
    sender.join()
    consumer.close()
    query.stop()
    # Drop the first second's records: they waited for the query's first batches.
    return {**percentiles_ms(latencies[50:] or latencies), "records_timed": len(latencies)}


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    records = 200_000 if args.quick else args.records
    work = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    info = start_cluster(work, 1)
    try:
        servers = info.bootstrap_servers
        create_topic(int(servers.rsplit(":", 1)[1]), TOPIC, PARTITIONS, 1)
        produce_seconds = timed(lambda: produce_topic(servers, records))
        spark = (SparkSession.builder.master("local[2]").appName("bench-spark")
                 .config("spark.ui.enabled", "false")
                 .config("spark.ui.showConsoleProgress", "false")
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        results = compare_sources(spark, servers, records)
        latency = streaming_latency(spark, servers, work, 10 if args.quick else 30)
        spark.stop()
        print(json.dumps({
            "records": records, "value_bytes": 100, "partitions": PARTITIONS,
            "master": "local[2]", "produce_s": round(produce_seconds, 2),
            **results,
            "raftka_read_rec_s": round(records / results["raftka_read_s"]),
            "baseline_read_rec_s": round(records / results["baseline_read_s"]),
            "count_speedup": round(results["baseline_count_s"] / results["raftka_count_s"], 2),
            "read_speedup": round(results["baseline_read_s"] / results["raftka_read_s"], 2),
            "stream_latency_ms": latency,
        }))
    finally:
        stop_quorum(info.dir, kill=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
