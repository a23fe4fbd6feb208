"""Raftka's own producer, idempotent by default, against real node processes: partition
leaders are killed with SIGKILL mid-stream and every partition still holds each
acknowledged record exactly once, in the order it was sent."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable

import pytest

from tests.integration.quorum_helpers import (
    QuorumCluster,
    start_cluster,  # noqa: F401  (fixture)
    wait_for,
)
from tests.integration.test_replication import (
    has_full_isrs,
    read_partitions,
    replicated_topic,
    views,
)

pytestmark = pytest.mark.slow

# The trio producer with Kafka's defaults (idempotence on, acks=all, five in flight).
PRODUCER = textwrap.dedent("""
    import os, sys, trio
    from clients.producer import open_producer
    bootstrap, topic, partitions, stop_file, acked_file = sys.argv[1:6]
    partitions = int(partitions)

    async def main():
        out = open(acked_file, "w", buffering=1)
        errors = []
        number = 0
        async with open_producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                                  "batch.size": 2048, "retry.backoff.ms": 50,
                                  "delivery.timeout.ms": 180000,
                                  "metadata.max.age.ms": 1000}) as producer:
            assert producer.config.enable_idempotence
            pending = []
            while not os.path.exists(stop_file):
                for _ in range(200):
                    future = await producer.send(topic, str(number).encode(),
                                                 partition=number % partitions)
                    pending.append((number, future))
                    number += 1
                await trio.sleep(0)
                done = [(n, f) for n, f in pending if f.done()]
                pending = [(n, f) for n, f in pending if not f.done()]
                for n, f in done:
                    if f.exception() is None:
                        md = f.result()
                        out.write(f"{md.partition} {md.offset} {n}\\n")
                    else:
                        errors.append(str(f.exception()))
            await producer.flush()
            for n, f in pending:
                if f.exception() is None:
                    md = f.result()
                    out.write(f"{md.partition} {md.offset} {n}\\n")
                else:
                    errors.append(str(f.exception()))
        print(f"sent {number} errors {len(errors)} {errors[:3]}")

    trio.run(main)
""")


def test_leader_kills_leave_no_duplicate_and_no_reordering(
        start_cluster: Callable[..., QuorumCluster], tmp_path: Path) -> None:
    cluster = start_cluster(3)
    topic, partitions = "idempotent", 4
    ports, bootstrap = replicated_topic(cluster, topic, partitions)
    all_nodes = list(cluster.broker_ids)
    stop_file, acked_file = tmp_path / "stop", tmp_path / "acked"
    producer = subprocess.Popen(
        [sys.executable, "-c", PRODUCER, bootstrap, topic, str(partitions), str(stop_file),
         str(acked_file)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        cwd=Path(__file__).resolve().parents[2])
    try:
        wait_for(lambda: acked_file.exists() and acked_file.stat().st_size > 10_000, 60,
                 "the producer's first acknowledgements")
        for round_no in range(2):
            leader = views(cluster, all_nodes)[(topic, 0)].leader
            cluster.kill(leader)
            size = acked_file.stat().st_size
            wait_for(lambda: acked_file.stat().st_size > size + 10_000, 90,
                     f"acks to resume after killing node {leader}", details=cluster.logs)
            cluster.restart(leader)
            wait_for(lambda: has_full_isrs(cluster, partitions), 90,
                     f"full ISRs after round {round_no}", details=cluster.logs)
        stop_file.touch()
        output, _ = producer.communicate(timeout=240)
    finally:
        if producer.poll() is None:
            producer.kill()
            producer.wait()
    assert producer.returncode == 0, output
    assert " errors 0 " in output, output
    acked: dict[int, int] = {}
    for line in acked_file.read_text().splitlines():
        partition, offset, number = map(int, line.split())
        assert number % partitions == partition
        acked[number] = offset
    assert len(acked) > 5_000, output
    log = read_partitions(bootstrap, topic, partitions)
    numbers = [n for records in log.values() for _, n in records]
    assert len(numbers) == len(set(numbers)), "duplicates in the log"
    where = {n: o for records in log.values() for o, n in records}
    missing = [n for n in acked if n not in where]
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:5]}"
    assert all(where[n] == o for n, o in acked.items()), "an ack named another offset"
    for records in log.values():
        in_log = [n for _, n in records]
        assert in_log == sorted(in_log), "a partition is out of order"
