"""`scripts/bench` (no mode flag): one node, RF=1, acks=1. The same confluent-kafka producer
writes to Raftka, to the in-memory broker (`scripts.benchmarks.memory_broker`: our network
layer and codec with the log left out) and to librdkafka's own mock cluster, taking turns
each round, then a fresh consumer reads Raftka's records back each round."""

from __future__ import annotations

import subprocess
import sys
from contextlib import contextmanager
from typing import Any, Iterator

from scripts.benchmarks.confluent_runs import (CONSUMER_CONFIG, broker_cpu, consume,
                                               median_run, produce)


@contextmanager
def in_memory_broker() -> Iterator[tuple[str, int]]:
    """Start `scripts.benchmarks.memory_broker`; yields (bootstrap, pid)."""
    process = subprocess.Popen([sys.executable, "-m", "scripts.benchmarks.memory_broker"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdin is not None and process.stdout is not None
    try:
        line = process.stdout.readline()
        if not line.startswith("listening on "):
            raise SystemExit(f"in-memory broker did not start: {line!r}")
        yield line.split()[-1], process.pid
    finally:
        process.stdin.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def rf1_bench(bootstrap: str, pid: int | None, records: int, rounds: int,
              keyed: bool = False) -> dict[str, Any]:
    """Produce to Raftka and to the in-memory brokers in alternation, then consume."""
    raftka: list[dict[str, Any]] = []
    in_memory: list[dict[str, Any]] = []
    mock: list[dict[str, Any]] = []
    with in_memory_broker() as (memory_bootstrap, memory_pid):
        order = [(raftka, bootstrap, pid, None), (in_memory, memory_bootstrap, memory_pid, None),
                 (mock, "", None, {"test.mock.num.brokers": 1})]
        for round_ in range(max(rounds, 1)):
            shift = round_ % len(order)
            for runs, servers, server_pid, extra in order[shift:] + order[:shift]:
                run: dict[str, Any] = {}
                with broker_cpu(server_pid, run):
                    run.update(produce(servers, "bench", records, "1", extra=extra, keyed=keyed))
                runs.append(run)
    consumed = []
    for _ in range(max(rounds, 1)):
        run = {}
        with broker_cpu(pid, run):
            run.update(consume(bootstrap, "bench", records))
        consumed.append(run)
    produced, baseline, rdkafka = median_run(raftka), median_run(in_memory), median_run(mock)
    return {"mode": "rf1", "records": records, "rounds": max(rounds, 1),
            "produce": produced, "produce_in_memory": baseline,
            "produce_vs_in_memory": round(produced["records_per_s"]
                                          / baseline["records_per_s"], 2),
            "produce_librdkafka_mock": rdkafka,
            "produce_vs_librdkafka_mock": round(produced["records_per_s"]
                                                / rdkafka["records_per_s"], 2),
            "consume": median_run(consumed), "consumer_config": CONSUMER_CONFIG}
