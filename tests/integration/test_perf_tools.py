"""`raftka producer-perf-test` and `raftka consumer-perf-test` against a real 1-node cluster:
their output lines are Kafka's tools' (parsed here), the counts are what the log holds,
and --throughput holds the rate."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from cluster.testing.cluster import RaftkaCluster, start_cluster

pytestmark = pytest.mark.slow

RAFTKA = str(Path(sys.executable).parent / "raftka")
WINDOW = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), "
                    r"([\d.]+) ms avg latency, ([\d.]+) ms max latency\.")
TOTAL = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), "
                   r"([\d.]+) ms avg latency, ([\d.]+) ms max latency, (\d+) ms 50th, "
                   r"(\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\.")
HEADER = ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, "
          "nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RaftkaCluster]:
    # No initial rebalance delay: the consumer's --timeout counts from its start.
    started = start_cluster(tmp_path_factory.mktemp("perf"), nodes=1,
                            group_initial_rebalance_delay_ms=0)
    try:
        yield started
    finally:
        started.close()


def raftka(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([RAFTKA, *args], capture_output=True, text=True, timeout=120)


def produce(cluster: RaftkaCluster, topic: str, *args: str) -> subprocess.CompletedProcess[str]:
    return raftka("producer-perf-test", "--topic", topic, *args, "--producer-props",
                  f"bootstrap.servers={cluster.bootstrap_servers}", "acks=all")


def log_end(cluster: RaftkaCluster, topic: str, partitions: int) -> int:
    with cluster.admin() as admin:
        listed = admin.list_offsets({(topic, p): -1 for p in range(partitions)})
    return sum(offset.offset for offset in listed.values())


def test_unthrottled_records_all_land_and_the_totals_say_so(cluster: RaftkaCluster) -> None:
    cluster.create_topic("perf-fast", partitions=2)
    produced = produce(cluster, "perf-fast", "--num-records", "3000", "--record-size", "100",
                       "--throughput", "-1", "--print-metrics")
    assert produced.returncode == 0, produced.stderr
    total = next(TOTAL.fullmatch(line) for line in produced.stdout.splitlines()
                 if TOTAL.fullmatch(line))
    assert int(total.group(1)) == 3000
    p50, p95, p99, p999 = (int(total.group(i)) for i in range(6, 10))
    assert p50 <= p95 <= p99 <= p999 <= float(total.group(5))
    assert log_end(cluster, "perf-fast", 2) == 3000
    metrics = produced.stdout.split("Metric Name", 1)[1]
    assert re.search(r"producer-metrics:record-send-total:\{client-id=perf-producer-client\}"
                     r" +: 3000\.000", metrics), metrics

    consumed = raftka("consumer-perf-test", "--bootstrap-server", cluster.bootstrap_servers,
                      "--topic", "perf-fast", "--messages", "3000", "--group", "perf-g",
                      "--timeout", "30000")
    assert consumed.returncode == 0, consumed.stderr
    header, values = consumed.stdout.splitlines()
    assert header == HEADER
    fields = values.split(", ")
    assert len(fields) == 10 and all(re.fullmatch(TIME, f) for f in fields[:2]), values
    assert float(fields[2]) == pytest.approx(3000 * 100 / 1024 / 1024, abs=1e-4)
    assert int(fields[4]) == 3000
    rebalance_ms, fetch_ms = int(fields[6]), int(fields[7])
    assert rebalance_ms >= 0 and fetch_ms > 0


def test_throughput_is_held_and_windows_are_reported(cluster: RaftkaCluster) -> None:
    cluster.create_topic("perf-slow")
    produced = produce(cluster, "perf-slow", "--num-records", "700", "--payload-monotonic",
                       "--throughput", "100")
    assert produced.returncode == 0, produced.stderr
    lines = produced.stdout.splitlines()
    windows = [WINDOW.fullmatch(line) for line in lines[:-1]]
    assert windows and all(windows), lines
    # 700 records at 100/s take 7 s: one 5-second window, then the total.
    for window in windows:
        assert float(window.group(2)) <= 105, window.group(0)
    total = TOTAL.fullmatch(lines[-1])
    assert total and int(total.group(1)) == 700, lines[-1]
    assert 85 <= float(total.group(2)) <= 101, lines[-1]
    assert log_end(cluster, "perf-slow", 1) == 700


def test_consumer_detailed_stats_and_a_timeout_short_of_the_count(
        cluster: RaftkaCluster) -> None:
    cluster.create_topic("perf-detail")
    produced = produce(cluster, "perf-detail", "--num-records", "400", "--record-size", "10",
                       "--throughput", "200")
    assert produced.returncode == 0, produced.stderr
    consumed = raftka("consumer-perf-test", "--bootstrap-server", cluster.bootstrap_servers,
                      "--topic", "perf-detail", "--messages", "500", "--show-detailed-stats",
                      "--reporting-interval", "1", "--timeout", "3000")
    assert consumed.returncode == 0, consumed.stderr
    header, *rows = consumed.stdout.splitlines()
    assert header.startswith("time, threadId, data.consumed.in.MB")
    assert rows[-1] == ("WARNING: Exiting before consuming the expected number of messages: "
                        "timeout (3000 ms) exceeded. You can use the --timeout option to "
                        "increase the timeout.")
    progress = [row.split(", ") for row in rows[:-1]]
    assert progress and all(len(p) == 10 and p[1] == "0" for p in progress), rows
    counts = [int(p[4]) for p in progress]
    assert counts == sorted(counts) and 0 < counts[-1] <= 400
