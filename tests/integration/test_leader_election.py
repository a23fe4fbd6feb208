"""Leader elections on a real three-node cluster: after a broker restarts, a preferred
election moves leadership back (by `raftka leader-election`, by confluent-kafka's and
kafka-python's admin clients, and by the controller's automatic rebalance); an election
on a partition without a live ISR gets Kafka's error and a clear message."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cluster.testing.metrics import metrics_url, scrape, value
from tests.conftest import REPO_ROOT
from tests.integration.quorum_helpers import (
    QuorumCluster,
    metadata,
    partition_views,
    start_cluster,  # noqa: F401  (fixture)
    wait_for,
)

pytestmark = pytest.mark.slow

TOPIC = "elected"
# Partition p prefers broker p + 1.
ASSIGNMENT = [[1, 2, 3], [2, 3, 1], [3, 1, 2]]


def raftka(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "broker.cli.main", *args], capture_output=True,
                          text=True, timeout=90, cwd=REPO_ROOT, stdin=subprocess.DEVNULL)


def create_assigned(cluster: QuorumCluster, topic: str, assignment: list[list[int]]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.info.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=len(assignment),
                                 replica_assignment=assignment)])[topic].result(60)


def leaders(cluster: QuorumCluster, via: int) -> dict[int, tuple[int, tuple[int, ...]]]:
    """partition -> (leader, isr) of TOPIC, as broker `via` sees it."""
    response = metadata(cluster.client_port(via)) or {}
    return {p: (v.leader, v.isr) for (t, p), v in partition_views(response).items()
            if t == TOPIC}


def wait_preferred(cluster: QuorumCluster, via: int, timeout: float = 30) -> None:
    wait_for(lambda: leaders(cluster, via) == {
        p: (replicas[0], leaders(cluster, via)[p][1]) for p, replicas in enumerate(ASSIGNMENT)}
        and all(len(isr) == 3 for _, isr in leaders(cluster, via).values()),
        timeout, "every partition led by its preferred replica with a full ISR",
        details=cluster.logs)


def restart_away_from(cluster: QuorumCluster, broker: int, via: int) -> None:
    """Restart `broker`: its partition's leadership moves away and stays away once it is
    back in the ISR."""
    partition = broker - 1
    cluster.terminate(broker)
    wait_for(lambda: leaders(cluster, via).get(partition, (broker,))[0] not in (broker, -1),
             30, f"leadership of partition {partition} to leave broker {broker}")
    cluster.restart(broker)
    wait_for(lambda: broker in leaders(cluster, via)[partition][1], 60,
             f"broker {broker} back in the ISR of partition {partition}", details=cluster.logs)
    assert leaders(cluster, via)[partition][0] != broker


def test_preferred_election_by_the_tool_and_the_admin_clients(start_cluster):
    cluster: QuorumCluster = start_cluster(3, overrides={"auto.leader.rebalance.enable": "false"})
    create_assigned(cluster, TOPIC, ASSIGNMENT)
    wait_preferred(cluster, via=3)
    bootstrap = f"127.0.0.1:{cluster.client_port(3)}"

    restart_away_from(cluster, 1, via=3)
    result = raftka("leader-election", "--bootstrap-server", bootstrap,
                    "--election-type", "PREFERRED", "--all-topic-partitions")
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == [
        f"Successfully completed leader election (PREFERRED) for partitions {TOPIC}-0"]
    wait_for(lambda: leaders(cluster, 3)[0][0] == 1, 15, "broker 1 to lead partition 0 again")
    again = raftka("leader-election", "--bootstrap-server", bootstrap, "--election-type",
                   "preferred", "--topic", TOPIC, "--partition", "0")
    assert (again.returncode, again.stdout.splitlines()) == (
        0, [f"Valid replica already elected for partitions {TOPIC}-0"])

    from confluent_kafka import ElectionType, TopicPartition
    from confluent_kafka.admin import AdminClient

    restart_away_from(cluster, 2, via=3)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    outcome = admin.elect_leaders(ElectionType.PREFERRED,
                                  [TopicPartition(TOPIC, 1)]).result(60)
    assert [(tp.topic, tp.partition, error) for tp, error in outcome.items()] == [
        (TOPIC, 1, None)]
    wait_for(lambda: leaders(cluster, 3)[1][0] == 2, 15, "broker 2 to lead partition 1 again")

    from kafka import KafkaAdminClient

    restart_away_from(cluster, 1, via=3)
    legacy = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        response = legacy.elect_leaders(0, {TOPIC: [0]})
    finally:
        legacy.close()
    assert [(r.topic, [(p.partition_id, p.error_code) for p in r.partition_result])
            for r in response.replica_election_results] == [(TOPIC, [(0, 0)])]
    wait_for(lambda: leaders(cluster, 3)[0][0] == 1, 15, "broker 1 to lead partition 0 again")


def test_the_automatic_rebalance_moves_leadership_back(start_cluster):
    cluster: QuorumCluster = start_cluster(3, overrides={
        "leader.imbalance.check.interval.seconds": "2"})
    create_assigned(cluster, TOPIC, ASSIGNMENT)
    wait_preferred(cluster, via=3)
    elections_before = elections(cluster)
    cluster.terminate(1)
    wait_for(lambda: leaders(cluster, 3).get(0, (1,))[0] not in (1, -1), 30,
             "leadership of partition 0 to leave broker 1")
    cluster.restart(1)
    # Broker 1 prefers one partition and leads none: 100% imbalance, over the default 10%.
    wait_preferred(cluster, via=3, timeout=60)
    # The active controller counted the rebalance's election.
    assert elections(cluster) >= elections_before + 1


def elections(cluster: QuorumCluster) -> float:
    """Leader elections the running controllers counted, summed over them."""
    return sum(value(scrape(metrics_url("127.0.0.1", cluster.node(n).metrics_port)),
                     "kafka_controller_controllerstats_leaderelections_total") or 0
               for n in cluster.controller_ids if cluster.is_running(n))


def test_an_election_without_a_live_isr_gets_kafkas_error(start_cluster):
    cluster: QuorumCluster = start_cluster(3, overrides={"auto.leader.rebalance.enable": "false"})
    create_assigned(cluster, "solo", [[3]])
    cluster.terminate(3)
    wait_for(lambda: partition_views(metadata(cluster.client_port(1)) or {}).get(
        ("solo", 0)) is not None and partition_views(metadata(cluster.client_port(1)))[
        ("solo", 0)].leader == -1, 30, "solo-0 to lose its only replica")
    bootstrap = f"127.0.0.1:{cluster.client_port(1)}"
    preferred = raftka("leader-election", "--bootstrap-server", bootstrap,
                       "--election-type", "PREFERRED", "--topic", "solo", "--partition", "0")
    assert preferred.returncode == 1
    assert preferred.stdout.splitlines() == [
        "Error completing leader election (PREFERRED) for partition: solo-0: "
        "PREFERRED_LEADER_NOT_AVAILABLE: Failed to elect leader for partition: preferred "
        "replica 3 is not a live member of the ISR [3]."], preferred.stderr
    assert preferred.stderr.splitlines() == ["Error: 1 replica(s) could not be elected"]
    unclean = raftka("leader-election", "--bootstrap-server", bootstrap,
                     "--election-type", "UNCLEAN", "--topic", "solo", "--partition", "0")
    assert unclean.returncode == 1
    assert unclean.stdout.splitlines() == [
        "Error completing leader election (UNCLEAN) for partition: solo-0: "
        "ELIGIBLE_LEADERS_NOT_AVAILABLE: Failed to elect leader for partition: none of the "
        "replicas [3] is live."], unclean.stderr
    missing = raftka("leader-election", "--bootstrap-server", bootstrap,
                     "--election-type", "PREFERRED", "--topic", "nope", "--partition", "0")
    assert missing.returncode == 1
    assert "nope-0: UNKNOWN_TOPIC_OR_PARTITION" in missing.stdout
    usage = raftka("leader-election", "--bootstrap-server", bootstrap,
                   "--election-type", "PREFERRED", "--topic", "solo")
    assert (usage.returncode, usage.stderr.splitlines()) == (
        1, ["Error: Missing required option(s) [partition]"])
