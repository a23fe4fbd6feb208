"""Operating a real 3-node cluster from the CLI: the admin commands retry retriable errors
until --timeout-ms (a transaction coordinator that does not exist yet, a controller
election), and `groups --delete-offsets` prints kafka-consumer-groups.sh's table with
Kafka's errors. One cluster for the module; the controller is killed last."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from cluster.testing.cluster import RaftkaCluster, start_cluster
from cluster.testing.waiting import wait_for

pytestmark = pytest.mark.slow

RAFTKA = str(Path(sys.executable).parent / "raftka")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RaftkaCluster]:
    started = start_cluster(tmp_path_factory.mktemp("ops-cli"), nodes=3)
    try:
        yield started
    finally:
        started.close()


def raftka(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([RAFTKA, *args], capture_output=True, text=True, timeout=timeout)


def test_transactions_describe_right_after_start_waits_for_the_coordinator(
        cluster: RaftkaCluster) -> None:
    # The first FindCoordinator creates the transaction state topic and is answered
    # COORDINATOR_NOT_AVAILABLE; the tool retries until the coordinator answers itself.
    described = raftka("transactions", "--bootstrap-server", cluster.bootstrap_servers,
                       "describe", "--transactional-id", "never-used", "--timeout-ms", "60000")
    assert described.returncode == 1
    assert "COORDINATOR" not in described.stderr, described.stderr
    assert described.stderr.rstrip().endswith("The transactional id could not be found."), \
        described.stderr


def delete_offsets(cluster: RaftkaCluster, group: str, *topics: str
                   ) -> subprocess.CompletedProcess[str]:
    args = [a for topic in topics for a in ("--topic", topic)]
    return raftka("groups", "--bootstrap-server", cluster.bootstrap_servers,
                  "--delete-offsets", "--group", group, *args)


def table(stdout: str) -> dict[tuple[str, str], str]:
    """{(TOPIC, PARTITION): STATUS} of the tool's table."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:3] == [
        "TOPIC", "PARTITION", "STATUS"])
    rows = {}
    for line in lines[start + 1:]:
        topic, partition, status = line.split(None, 2)
        rows[(topic, partition)] = status
    return rows


def test_delete_offsets_of_an_empty_group(cluster: RaftkaCluster) -> None:
    cluster.create_topic("do-a", partitions=2, replication_factor=3)
    cluster.create_topic("do-b", partitions=1, replication_factor=3)
    with cluster.admin() as admin:
        admin.alter_group_offsets("do-empty", {("do-a", 0): 5, ("do-a", 1): 6, ("do-b", 0): 7})

    deleted = delete_offsets(cluster, "do-empty", "do-a:0", "do-b", "do-missing")
    # An unknown topic is that row's error; the others still go through.
    assert deleted.returncode == 1, deleted.stderr
    assert deleted.stderr.strip() == ("Error: Encountered some partition-level error, see the "
                                      "follow-up details.")
    assert table(deleted.stdout) == {
        ("do-a", "0"): "Successful", ("do-b", "0"): "Successful",
        ("do-missing", "-"): "Error: UNKNOWN_TOPIC_OR_PARTITION: This server does not host "
                             "this topic-partition."}
    with cluster.admin() as admin:
        assert admin.list_group_offsets("do-empty") == {("do-a", 1): 6}

    clean = delete_offsets(cluster, "do-empty", "do-a")
    assert clean.returncode == 0, clean.stderr
    assert clean.stdout.splitlines()[0] == ("Request succeeded for deleting offsets from "
                                            "group do-empty.")
    assert table(clean.stdout) == {("do-a", "0"): "Successful", ("do-a", "1"): "Successful"}

    nobody = delete_offsets(cluster, "do-nobody", "do-a:0")
    assert nobody.returncode == 1
    assert nobody.stderr.strip() == "Error: The group id does not exist."
    assert table(nobody.stdout) == {
        ("do-a", "0"): "Error: GROUP_ID_NOT_FOUND: The group id does not exist."}


def test_delete_offsets_of_a_topic_an_active_group_consumes_is_refused(
        cluster: RaftkaCluster) -> None:
    from confluent_kafka import Consumer

    cluster.create_topic("do-live", partitions=1, replication_factor=3)
    cluster.create_topic("do-idle", partitions=1, replication_factor=3)
    with cluster.admin() as admin:
        admin.alter_group_offsets("do-active", {("do-idle", 0): 3})
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers,
                         "group.id": "do-active", "enable.auto.commit": False})
    try:
        consumer.subscribe(["do-live"])

        def assigned() -> bool:
            consumer.poll(0.2)
            return bool(consumer.assignment())
        wait_for(assigned, "the consumer's assignment", 30)
        refused = delete_offsets(cluster, "do-active", "do-live", "do-idle")
    finally:
        consumer.close()
    assert refused.returncode == 1
    assert table(refused.stdout) == {
        ("do-live", "0"): "Error: GROUP_SUBSCRIBED_TO_TOPIC: The group is subscribed to the "
                          "topic, so its offsets cannot be deleted.",
        ("do-idle", "0"): "Successful"}


def quorum_status(cluster: RaftkaCluster, node: int) -> subprocess.CompletedProcess[str]:
    info = cluster.info.node(node)
    server = f"{info.host}:{info.client_port}"
    return raftka("quorum", "describe", "--bootstrap-server", server, "--status", "--json",
                  "--timeout-ms", "30000")


def test_quorum_describe_rides_through_a_controller_election(cluster: RaftkaCluster) -> None:
    first = quorum_status(cluster, cluster.node_ids[0])
    assert first.returncode == 0, first.stderr
    leader = json.loads(first.stdout)["leader_id"]
    survivor = next(n for n in cluster.node_ids if n != leader)
    cluster.kill(leader)
    # Every describe in the election window answers (after retrying NOT_LEADER_OR_FOLLOWER)
    # until the survivors report a new leader.
    deadline = time.monotonic() + 60
    while True:
        answered = quorum_status(cluster, survivor)
        assert answered.returncode == 0, answered.stderr
        if json.loads(answered.stdout)["leader_id"] not in (leader, -1):
            break
        assert time.monotonic() < deadline, "no new controller within 60 s"
