"""kcat (librdkafka's command-line client, a Debian package) against a launcher cluster:
`kcat -P` produces keyed records with headers per codec, `kcat -C -e` reads them back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from scripts.benchmarks.cluster import create_topic
from scripts.benchmarks.latency import latency_bench
from scripts.benchmarks.native_load import LoadGenerator
from scripts.benchmarks.node_cpu import node_pids
from scripts.benchmarks.replication import replication_matrix
from tests.compat.cluster import Cluster

RECORDS = 2_000
CODECS = ["none", "gzip", "lz4", "snappy", "zstd"]


@pytest.fixture(scope="module")
def kcat() -> str:
    path = shutil.which("kcat")
    if path is None:
        reason = "kcat is not installed (Debian package `kcat`; scripts/test installs it as root)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def test_kcat_produce_then_consume(kcat: str, cluster: Cluster) -> None:
    for codec in CODECS:
        topic = f"kcat-{codec}"
        cluster.create_topic(topic)
        lines = "".join(f"key-{i}\tvalue-{codec}-{i}\n" for i in range(RECORDS))
        subprocess.run(
            [kcat, "-P", "-b", cluster.bootstrap, "-t", topic, "-p", "0", "-K", "\t",
             "-H", f"codec={codec}", "-z", codec, "-X", "broker.address.family=v4"],
            input=lines, text=True, check=True, timeout=60, capture_output=True)
        result = subprocess.run(
            [kcat, "-C", "-b", cluster.bootstrap, "-t", topic, "-p", "0", "-o", "beginning",
             "-e", "-J", "-q", "-X", "broker.address.family=v4"],
            text=True, check=True, timeout=60, capture_output=True)
        messages = [json.loads(line) for line in result.stdout.splitlines() if line]
        assert [m["offset"] for m in messages] == list(range(RECORDS)), codec
        for i, message in enumerate(messages):
            assert (message["key"], message["payload"]) == (f"key-{i}", f"value-{codec}-{i}")
            assert message["headers"] == ["codec", codec]


def test_native_benchmarks_measure_on_a_small_load(kcat: str, cluster: Cluster,
                                                   tmp_path: Path) -> None:
    """scripts/bench's native modes, on a few records: every case of the replication matrix
    is produced and read back in full with each node's CPU, and the paced latency run
    measures every stamped record it sent."""
    load = LoadGenerator(tmp_path)
    assert load.name == "kcat"

    def create(name: str, partitions: int, rf: int, configs: dict[str, str]) -> dict[int, int]:
        return create_topic(cluster.port, name, partitions, rf, configs)

    matrix = replication_matrix(load, cluster.bootstrap, node_pids(cluster.info), create,
                                records=3_000)
    for partitions in ("p1", "p4"):
        for case in matrix[partitions].values():
            assert case["records_per_s"] > 0 and case["consume"]["records"] == 3_000
            assert sorted(p for n in case["nodes"].values() for p in n["led_partitions"]) == \
                list(range(case["partitions"]))
            assert all(n["cpu_s"] is not None for n in case["nodes"].values())
    assert matrix["ratios"]["rf3_acks_all_vs_rf1_acks1_p4"] > 0
    create_topic(cluster.port, "bench-latency", 1, 3, {"min.insync.replicas": "2"})
    run = latency_bench(kcat, cluster.bootstrap, "bench-latency", 2_000, 1, 1)
    # One stamped record a millisecond (the first of each burst), every one read back.
    assert run["records_sent"] > 1_000
    assert run["records_measured"] == run["stamped_records"] > 100
    assert run["stamped_records"] < run["records_sent"]
    assert 0 < run["p50_ms"] <= run["p99_ms"] <= run["p999_ms"] <= run["max_ms"]
    assert sum(run["histogram"].values()) == run["records_measured"]
    assert all(cpu is not None and cpu >= 0 for cpu in run["load_cpu_s"].values())
