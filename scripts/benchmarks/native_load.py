"""The native load generator of the cluster benchmarks: kcat (librdkafka's command-line
client) producing 100-byte lines from a file and consuming to a pipe, so that no Python client
limits what the brokers are measured at. kcat is installed from Debian's packages when it is
missing and the benchmark runs as root; otherwise confluent-kafka (the same librdkafka, driven
from Python) stands in and the results say so."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

RECORD = b"x" * 100
# Producer settings of every run: what Kafka's own perf tool would be given for throughput.
PRODUCER_SETTINGS = {"linger.ms": "5", "batch.num.messages": "10000", "batch.size": "1000000",
                     "queue.buffering.max.messages": "500000"}
# librdkafka stops fetching while `queued.min.messages` are buffered and then backs off (by
# `fetch.queue.backoff.ms`, 1000 ms by default, from 2.1; Debian's kcat may be older and
# lacks that key): a large queue keeps a fast consumer from measuring that timer.
CONSUMER_SETTINGS = {"fetch.wait.max.ms": "100", "enable.auto.commit": "false",
                     "queued.min.messages": "1000000", "fetch.error.backoff.ms": "10"}


def kcat_path() -> str | None:
    """Where kcat is, after installing it from Debian's packages when it is missing and we
    are root; None when it is not there and cannot be installed."""
    found = shutil.which("kcat")
    if found or os.geteuid() != 0 or not shutil.which("apt-get"):
        return found
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "install", "-y", "-q", "kcat"],
                    ["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "kcat"]):
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if shutil.which("kcat"):
            break
    return shutil.which("kcat")


def write_records(path: Path, count: int) -> Path:
    """`count` lines of 100 bytes each (a newline after each), kcat's producer input."""
    line = RECORD + b"\n"
    with open(path, "wb") as out:
        chunk = line * 10_000
        for _ in range(count // 10_000):
            out.write(chunk)
        out.write(line * (count % 10_000))
    return path


def settings_args(settings: dict[str, str]) -> list[str]:
    return [arg for key, value in settings.items() for arg in ("-X", f"{key}={value}")]


class LoadGenerator:
    """Produces and consumes whole topics with kcat, or with confluent-kafka without it."""

    def __init__(self, workdir: Path, allow_kcat: bool = True) -> None:
        self.workdir = workdir
        self.kcat = kcat_path() if allow_kcat else None
        self._inputs: dict[int, Path] = {}

    @property
    def name(self) -> str:
        return "kcat" if self.kcat else "confluent-kafka"

    def _input(self, count: int) -> Path:
        if count not in self._inputs:
            self._inputs[count] = write_records(self.workdir / f"records-{count}.txt", count)
        return self._inputs[count]

    def produce(self, bootstrap: str, topic: str, count: int, acks: str) -> dict[str, Any]:
        """Send `count` 100-byte records (spread by librdkafka's partitioner over the topic's
        partitions); records/s and MB/s over the producer's whole life, which includes its
        connection set-up and the wait for the last acknowledgement."""
        settings = {**PRODUCER_SETTINGS, "acks": acks,
                    "enable.idempotence": "true" if acks == "all" else "false"}
        started = time.perf_counter()
        if self.kcat:
            source = self._input(count)
            try:
                done = subprocess.run([self.kcat, "-P", "-q", "-b", bootstrap, "-t", topic,
                                       *settings_args(settings), "-l", str(source)],
                                      capture_output=True, text=True, timeout=600)
            except subprocess.TimeoutExpired:
                raise SystemExit(f"kcat produce to {topic} took over 600 s") from None
            if done.returncode != 0 or "fail" in done.stderr.lower():
                why = done.stderr.strip()[-300:] or "some records were not delivered"
                raise SystemExit(f"kcat produce to {topic} failed (exit status "
                                 f"{done.returncode}): {why}")
        else:
            _confluent_produce(bootstrap, topic, count, settings)
        elapsed = time.perf_counter() - started
        return {"records_per_s": round(count / elapsed),
                "mb_per_s": round(count * len(RECORD) / elapsed / 1e6, 1),
                "seconds": round(elapsed, 2)}

    def consume(self, bootstrap: str, topic: str, expected: int) -> dict[str, Any]:
        """Read `expected` records from the beginning of the topic (not to its end as read at
        the start: after acks=1 the high watermark may still trail); records/s over the
        consumer's life."""
        started = time.perf_counter()
        if self.kcat:
            try:
                done = subprocess.run([self.kcat, "-C", "-q", "-c", str(expected), "-o",
                                       "beginning", "-b", bootstrap, "-t", topic, "-f", ".",
                                       *settings_args(CONSUMER_SETTINGS)],
                                      capture_output=True, timeout=120)
            except subprocess.TimeoutExpired:
                raise SystemExit(f"kcat read fewer than {expected} records of {topic} "
                                 "within 120 s") from None
            if done.returncode != 0:
                raise SystemExit(f"kcat consume of {topic} failed: "
                                 f"{done.stderr.decode(errors='replace').strip()[-300:]}")
            seen = done.stdout.count(b".")
        else:
            seen = _confluent_consume(bootstrap, topic, expected)
        elapsed = time.perf_counter() - started
        return {"records_per_s": round(seen / elapsed), "records": seen,
                "mb_per_s": round(seen * len(RECORD) / elapsed / 1e6, 1)}


def _confluent_produce(bootstrap: str, topic: str, count: int, settings: dict[str, str]) -> None:
    import confluent_kafka

    errors: list[Any] = []
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, **settings})

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    for _ in range(count):
        while True:
            try:
                producer.produce(topic, RECORD, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.001)
    if producer.flush(120) or errors:
        raise SystemExit(f"produce to {topic} failed: {errors[:1] or 'not all delivered'}")


def _confluent_consume(bootstrap: str, topic: str, expected: int) -> int:
    import confluent_kafka

    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "bench",
                                         "auto.offset.reset": "earliest", **CONSUMER_SETTINGS})
    consumer.subscribe([topic])
    seen = 0
    deadline = time.monotonic() + 120
    while seen < expected and time.monotonic() < deadline:
        seen += sum(1 for m in consumer.consume(10_000, timeout=0.5) if m.error() is None)
    consumer.close()
    return seen
