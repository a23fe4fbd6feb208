"""The operations CLI against a real 3-node cluster started like scripts/bootstrap-quorum:
topics, console producer and consumer, broker-api-versions (each a `raftka` subprocess)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from cluster.launcher import ClusterInfo, stop_quorum
from cluster.launcher.ports import bootstrap_on_free_ports
from cluster.testing.waiting import wait_for

pytestmark = pytest.mark.slow

RAFTKA = str(Path(sys.executable).parent / "raftka")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterInfo]:
    info = bootstrap_on_free_ports(tmp_path_factory.mktemp("cli-cluster"), nodes=3, timeout=60)
    try:
        yield info
    finally:
        stop_quorum(info.dir)


def raftka(*args: str, stdin: str | None = None, timeout: float = 60
           ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([RAFTKA, *args], input=stdin, capture_output=True, text=True,
                          timeout=timeout)


def test_topics_create_list_describe_alter_delete(cluster: ClusterInfo) -> None:
    b = cluster.bootstrap_servers
    created = raftka("topics", "--bootstrap-server", b, "--create", "--topic", "orders",
                     "--partitions", "3", "--replication-factor", "3")
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == "Created topic orders."

    again = raftka("topics", "--bootstrap-server", b, "--create", "--topic", "orders")
    assert again.returncode == 1
    assert "Error while executing topic command : Topic 'orders' already exists." in again.stderr

    listed = raftka("topics", "--bootstrap-server", b, "--list")
    assert listed.returncode == 0
    assert "orders" in listed.stdout.split()

    described = raftka("topics", "--bootstrap-server", b, "--describe", "--topic", "orders")
    assert described.returncode == 0, described.stderr
    header, *rows = described.stdout.rstrip("\n").split("\n")
    assert re.fullmatch(r"Topic: orders\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 3\t"
                        r"ReplicationFactor: 3\tConfigs: .*", header), header
    assert len(rows) == 3
    for partition, row in enumerate(rows):
        match = re.fullmatch(rf"\tTopic: orders\tPartition: {partition}\tLeader: (\d)\t"
                             r"Replicas: (\d,\d,\d)\tIsr: ([\d,]+)\tElr: \tLastKnownElr: ", row)
        assert match, row
        assert sorted(match.group(2).split(",")) == ["1", "2", "3"]
        assert match.group(1) in match.group(2).split(",")

    altered = raftka("topics", "--bootstrap-server", b, "--alter", "--topic", "orders",
                     "--partitions", "5")
    assert altered.returncode == 0, altered.stderr

    def five_partitions() -> bool:
        out = raftka("topics", "--bootstrap-server", b, "--describe", "--topic", "orders")
        return "PartitionCount: 5" in out.stdout

    wait_for(five_partitions, "5 partitions", 15)
    under = raftka("topics", "--bootstrap-server", b, "--describe", "--topic", "orders",
                   "--under-replicated-partitions")
    assert under.returncode == 0 and under.stdout.strip() == ""

    deleted = raftka("topics", "--bootstrap-server", b, "--delete", "--topic", "orders")
    assert deleted.returncode == 0, deleted.stderr
    wait_for(lambda: "orders" not in raftka("topics", "--bootstrap-server", b,
                                            "--list").stdout.split(), "deletion", 15)
    missing = raftka("topics", "--bootstrap-server", b, "--describe", "--topic", "orders")
    assert missing.returncode == 1
    assert "Topic 'orders' does not exist as expected" in missing.stderr


def test_broker_api_versions_prints_kafka_format(cluster: ClusterInfo) -> None:
    out = raftka("broker-api-versions", "--bootstrap-server", cluster.bootstrap_servers)
    assert out.returncode == 0, out.stderr
    blocks = out.stdout.rstrip("\n").split("\n)\n")
    assert len(blocks) == 3
    ports = sorted(n.client_port for n in cluster.brokers)
    for node_id, (block, port) in enumerate(zip(blocks, ports), start=1):
        first, *apis = block.rstrip(")").rstrip("\n").split("\n")
        assert first == f"127.0.0.1:{port} (id: {node_id} rack: null isFenced: false) -> ("
        assert any(line.startswith("\tMetadata(3): ") for line in apis)
        assert any(line.startswith("\tApiVersions(18): 0 to ") for line in apis)
        for line in apis[:-1]:
            assert re.fullmatch(r"\t\w+\(\d+\): \d+ to \d+ \[usable: (\d+|UNSUPPORTED)\],",
                                line), line
        assert re.fullmatch(r"\t\w+\(\d+\): \d+ to \d+ \[usable: (\d+|UNSUPPORTED)\]",
                            apis[-1])


def test_console_producer_then_consumer_round_trip(cluster: ClusterInfo) -> None:
    b = cluster.bootstrap_servers
    created = raftka("topics", "--bootstrap-server", b, "--create", "--topic", "lines",
                     "--partitions", "1", "--replication-factor", "3")
    assert created.returncode == 0, created.stderr
    lines = [f"line-{i:04d}" for i in range(1000)]
    produced = raftka("console-producer", "--bootstrap-server", b, "--topic", "lines",
                      stdin="\n".join(lines) + "\n")
    assert produced.returncode == 0, produced.stderr
    consumed = raftka("console-consumer", "--bootstrap-server", b, "--topic", "lines",
                      "--from-beginning", "--max-messages", "1000", "--timeout-ms", "20000")
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.splitlines() == lines
    assert "Processed a total of 1000 messages" in consumed.stderr


def test_console_tools_keys_and_partition_options(cluster: ClusterInfo) -> None:
    b = cluster.bootstrap_servers
    created = raftka("topics", "--bootstrap-server", b, "--create", "--topic", "keyed",
                     "--partitions", "2", "--replication-factor", "1")
    assert created.returncode == 0, created.stderr
    produced = raftka("console-producer", "--bootstrap-server", b, "--topic", "keyed",
                      "--property", "parse.key=true", "--property", "key.separator=:",
                      stdin="".join(f"k{i}:v{i}\n" for i in range(20)))
    assert produced.returncode == 0, produced.stderr
    consumed = raftka("console-consumer", "--bootstrap-server", b, "--topic", "keyed",
                      "--from-beginning", "--max-messages", "20", "--timeout-ms", "20000",
                      "--property", "print.key=true", "--property", "print.partition=true")
    assert consumed.returncode == 0, consumed.stderr
    rows = [line.split("\t") for line in consumed.stdout.splitlines()]
    assert sorted((k, v) for _, k, v in rows) == sorted((f"k{i}", f"v{i}") for i in range(20))
    assert all(p in ("Partition:0", "Partition:1") for p, _, _ in rows)

    def group_run(count: int) -> list[str]:
        run = raftka("console-consumer", "--bootstrap-server", b, "--topic", "keyed",
                     "--group", "g1", "--from-beginning", "--max-messages", str(count),
                     "--timeout-ms", "30000", "--property", "print.key=true")
        assert run.returncode == 0, run.stderr
        return sorted(line.split("\t")[0] for line in run.stdout.splitlines())

    assert group_run(20) == sorted(f"k{i}" for i in range(20))
    more = raftka("console-producer", "--bootstrap-server", b, "--topic", "keyed",
                  "--property", "parse.key=true", "--property", "key.separator=:",
                  stdin="".join(f"k{i}:v{i}\n" for i in range(20, 25)))
    assert more.returncode == 0, more.stderr
    # The group committed what the first run printed: the second resumes after it.
    assert group_run(5) == sorted(f"k{i}" for i in range(20, 25))
