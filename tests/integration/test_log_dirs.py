"""DescribeLogDirs on a real three-node cluster: `raftka log-dirs --describe` prints
Kafka's JSON (size and offset lag per partition per directory), and kafka-python's admin
client reads the same answer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.integration.quorum_helpers import (
    QuorumCluster,
    create_topics,
    produce,
    start_cluster,  # noqa: F401  (fixture)
    wait_for,
)

pytestmark = pytest.mark.slow

TOPIC = "sized"


def raftka(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "broker.cli.main", *args], capture_output=True,
                          text=True, timeout=90, cwd=REPO_ROOT, stdin=subprocess.DEVNULL)


def describe(bootstrap: str, *options: str) -> dict:
    result = raftka("log-dirs", "--describe", "--bootstrap-server", bootstrap, *options)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Querying brokers for log directories information"
    assert lines[1].startswith("Received log directory information from brokers ")
    assert len(lines) == 3
    return json.loads(lines[2])


def test_log_dirs_describe_prints_sizes_and_lags_per_directory(start_cluster):
    cluster: QuorumCluster = start_cluster(3)
    bootstrap = cluster.info.bootstrap_servers
    create_topics(cluster.client_port(1), {TOPIC: (2, 3), "other": (1, 1)})
    produce(bootstrap, TOPIC, [b"x" * 100 for _ in range(20)], 2)

    def replicated() -> dict | None:
        document = describe(bootstrap, "--broker-list", "1,2", "--topic-list", TOPIC)
        sizes = {(b["broker"], p["partition"]): p["size"] for b in document["brokers"]
                 for d in b["logDirs"] for p in d["partitions"]}
        wanted = {(b, f"{TOPIC}-{p}") for b in (1, 2) for p in (0, 1)}
        if set(sizes) != wanted or not all(
                sizes[(1, f"{TOPIC}-{p}")] == sizes[(2, f"{TOPIC}-{p}")] > 0 for p in (0, 1)):
            return None
        return document

    document = wait_for(replicated, 30, "both partitions replicated to brokers 1 and 2")
    assert document["version"] == 1
    assert [b["broker"] for b in document["brokers"]] == [1, 2]
    for broker in document["brokers"]:
        (log_dir,) = broker["logDirs"]
        node_data = Path(cluster.node(broker["broker"]).properties["log.dirs"]).resolve()
        assert log_dir["logDir"] == str(node_data)
        assert log_dir["error"] is None
        assert sorted(p["partition"] for p in log_dir["partitions"]) == [f"{TOPIC}-0",
                                                                         f"{TOPIC}-1"]
        for partition in log_dir["partitions"]:
            assert partition["offsetLag"] == 0 and partition["isFuture"] is False
            on_disk = sum(f.stat().st_size for f in (node_data / partition["partition"]).glob(
                "*.log"))
            assert partition["size"] == on_disk
    # Without --topic-list every topic shows; without --broker-list every broker answers.
    everything = describe(bootstrap)
    assert [b["broker"] for b in everything["brokers"]] == [1, 2, 3]
    shown = {p["partition"] for b in everything["brokers"] for d in b["logDirs"]
             for p in d["partitions"]}
    assert {f"{TOPIC}-0", f"{TOPIC}-1", "other-0"} <= shown

    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        answers = admin.describe_log_dirs(topic_partitions={TOPIC: [0]}, brokers=[3])
    finally:
        admin.close()
    text = repr(answers)
    assert str(Path(cluster.node(3).properties["log.dirs"]).resolve()) in text
    assert TOPIC in text

    missing = raftka("log-dirs", "--describe", "--bootstrap-server", bootstrap,
                     "--broker-list", "1,7")
    assert (missing.returncode, missing.stdout, missing.stderr.splitlines()) == (1, "", [
        "Error: The given brokers do not exist from --broker-list: 7. Current existent "
        "brokers: 1,2,3"])
