"""Partition reassignment (KIP-455) on a four-node cluster started by the launcher: bad
input gets Kafka's error codes, a reassignment can be cancelled (through kafka-python's
admin client), and a topic moves from brokers {1,2,3} to {2,3,4} under a continuous acks=all
idempotent producer while the active controller is killed with SIGKILL, losing nothing
acknowledged and leaving no directory behind on broker 1.

Broker 4 is frozen (SIGSTOP) while a reassignment is started, so it cannot catch up before
the test has looked at the ongoing state; it is thawed once the controller is killed.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from cluster.launcher import LauncherError
from cluster.launcher.ports import bootstrap_on_free_ports
from clients.admin import BlockingAdmin, NewTopic
from clients.admin.reassignment_operations import OngoingReassignment
from clients.net import KafkaConnectionError
from clients.protocol import ErrorCode, KafkaError
from tests.integration.quorum_helpers import (
    FAST_OVERRIDES,
    HOST,
    QuorumCluster,
    listed_brokers,
    metadata,
    partition_views,
    wait_for,
)
from tests.integration.test_producer_idempotence import PRODUCER
from tests.integration.test_replication import read_partitions

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
# What a forwarded request meets while the active controller changes.
CONTROLLER_MOVING = {ErrorCode.NOT_CONTROLLER, ErrorCode.REQUEST_TIMED_OUT}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QuorumCluster]:
    info = bootstrap_on_free_ports(tmp_path_factory.mktemp("reassignment"), 4, 0,
                                   FAST_OVERRIDES, timeout=60)
    started = QuorumCluster(info)
    yield started
    try:
        started.kill_all()
    except LauncherError:
        pass


def bootstrap(cluster: QuorumCluster, nodes: tuple[int, ...] = (1, 2, 3, 4)) -> str:
    return ",".join(f"{HOST}:{cluster.client_port(n)}" for n in nodes)


def answering(cluster: QuorumCluster) -> list[int]:
    return [n for n in cluster.broker_ids if cluster.is_running(n)]


def views(cluster: QuorumCluster, topic: str, nodes: list[int] | None = None) -> dict:
    for node in nodes or answering(cluster):
        response = metadata(cluster.client_port(node), timeout=2.0)
        if response is not None:
            return {p: v for (t, p), v in partition_views(response).items() if t == topic}
    return {}


def partition_dirs(cluster: QuorumCluster, node: int, topic: str) -> list[Path]:
    return sorted((cluster.node(node).dir / "data").glob(f"{topic}-*"))


def create(cluster: QuorumCluster, topic: str, assignment: dict[int, list[int]],
           nodes: tuple[int, ...] = (1, 2, 3, 4)) -> None:
    with BlockingAdmin({"bootstrap.servers": bootstrap(cluster, nodes)}) as admin:
        admin.create_topics([NewTopic(topic, replica_assignments=assignment,
                                      configs={"min.insync.replicas": "2"})])
    size = {p: len(r) for p, r in assignment.items()}
    wait_for(lambda: len(current := views(cluster, topic)) == len(assignment) and all(
        len(v.isr) == size[p] and v.leader >= 0 for p, v in current.items()), 30,
        f"{topic}'s ISRs", details=cluster.logs)


def reassign(admin: BlockingAdmin, targets: dict[tuple[str, int], list[int] | None]
             ) -> dict[tuple[str, int], int]:
    """AlterPartitionReassignments, retried while the controller moves."""
    def attempt() -> dict[tuple[str, int], int] | None:
        results = {(r.topic, r.partition): r.error_code
                   for r in admin.alter_partition_reassignments(targets)}
        if any(c in CONTROLLER_MOVING for c in results.values()):
            return None
        return results
    return wait_for(attempt, 30, "an answer to AlterPartitionReassignments")


def ongoing(admin: BlockingAdmin) -> list[OngoingReassignment] | None:
    try:
        return admin.list_partition_reassignments()
    except (KafkaError, KafkaConnectionError):
        return None  # the controller is moving


def test_bad_input_gets_kafkas_error_codes(cluster: QuorumCluster) -> None:
    create(cluster, "fixed", {0: [1, 2, 3]})
    with BlockingAdmin({"bootstrap.servers": bootstrap(cluster)}) as admin:
        assert reassign(admin, {("fixed", 0): [1, 2, 2]}) == {
            ("fixed", 0): ErrorCode.INVALID_REPLICA_ASSIGNMENT}
        assert reassign(admin, {("fixed", 0): [1, 2, 9]}) == {
            ("fixed", 0): ErrorCode.INVALID_REPLICA_ASSIGNMENT}
        assert reassign(admin, {("fixed", 0): []}) == {
            ("fixed", 0): ErrorCode.INVALID_REPLICA_ASSIGNMENT}
        assert reassign(admin, {("fixed", 5): [1, 2, 3], ("missing", 0): [1, 2, 3]}) == {
            ("fixed", 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert reassign(admin, {("fixed", 0): None}) == {
            ("fixed", 0): ErrorCode.NO_REASSIGNMENT_IN_PROGRESS}
        assert admin.list_partition_reassignments() == []
    assert views(cluster, "fixed")[0].replicas == (1, 2, 3)


def test_kafka_python_cancels_a_reassignment(cluster: QuorumCluster) -> None:
    import kafka
    from kafka.admin import KafkaAdminClient

    create(cluster, "cancelled", {0: [1, 2, 3]})
    cluster.send_signal(4, signal.SIGSTOP)
    try:
        # Fenced, so no Metadata answer names it (kafka-python sends to the controller id).
        wait_for(lambda: 4 not in listed_brokers(metadata(cluster.client_port(1)) or {}), 30,
                 "broker 4 to be fenced")
        admin = KafkaAdminClient(bootstrap_servers=bootstrap(cluster, (1, 2, 3)),
                                 request_timeout_ms=30_000)
        tp = kafka.TopicPartition("cancelled", 0)
        try:
            assert admin.alter_partition_reassignments({tp: [1, 2, 4]}) == {tp: None}
            assert admin.list_partition_reassignments() == {tp: {
                "replicas": [1, 2, 4, 3], "adding_replicas": [4], "removing_replicas": [3]}}
            wait_for(lambda: views(cluster, "cancelled")[0].replicas == (1, 2, 4, 3), 10,
                     "Metadata to show the grown replica set")
            assert admin.alter_partition_reassignments({tp: None}) == {tp: None}
            assert admin.list_partition_reassignments() == {}
            errors = admin.alter_partition_reassignments({tp: None})
            assert errors[tp].errno == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
        finally:
            admin.close()
    finally:
        cluster.send_signal(4, signal.SIGCONT)
    wait_for(lambda: views(cluster, "cancelled")[0].replicas == (1, 2, 3), 10,
             "Metadata to show the original replicas")
    wait_for(lambda: 4 in listed_brokers(metadata(cluster.client_port(1)) or {}), 30,
             "broker 4 to be back")
    wait_for(lambda: not partition_dirs(cluster, 4, "cancelled"), 30,
             "broker 4 to hold no copy of the cancelled move")


def test_reassignment_survives_a_controller_kill_and_loses_nothing(
        cluster: QuorumCluster, tmp_path: Path) -> None:
    topic = "moving"
    create(cluster, topic, {0: [1, 2, 3], 1: [3, 1, 2]})
    targets: dict[tuple[str, int], list[int] | None] = {(topic, 0): [2, 3, 4],
                                                        (topic, 1): [3, 4, 2]}
    stop_file, acked_file = tmp_path / "stop", tmp_path / "acked"
    producer = subprocess.Popen(
        [sys.executable, "-c", PRODUCER, bootstrap(cluster), topic, "2", str(stop_file),
         str(acked_file)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        cwd=REPO)
    paused = False
    try:
        wait_for(lambda: acked_file.exists() and acked_file.stat().st_size > 20_000, 60,
                 "the producer's first acknowledgements")
        cluster.send_signal(4, signal.SIGSTOP)
        paused = True
        with BlockingAdmin({"bootstrap.servers": bootstrap(cluster, (1, 2, 3))}) as admin:
            assert reassign(admin, targets) == {key: 0 for key in targets}
            moving = wait_for(lambda: ongoing(admin), 30, "the ongoing reassignments")
            assert moving == [OngoingReassignment(topic, 0, (2, 3, 4, 1), (4,), (1,)),
                              OngoingReassignment(topic, 1, (3, 4, 2, 1), (4,), (1,))]
        controller = wait_for(lambda: cluster.quorum_leader([1, 2, 3]) in (1, 2, 3)
                              and cluster.quorum_leader([1, 2, 3]), 30, "the active controller")
        cluster.kill(controller)
        cluster.send_signal(4, signal.SIGCONT)
        paused = False
        size = acked_file.stat().st_size
        wait_for(lambda: acked_file.stat().st_size > size + 20_000, 120,
                 f"acks to go on after killing controller {controller}", details=cluster.logs)
        cluster.restart(controller)

        def finished() -> bool:
            current = views(cluster, topic)
            return len(current) == 2 and all(
                list(current[p].replicas) == targets[(topic, p)]
                and set(current[p].isr) == set(targets[(topic, p)] or ())
                and current[p].leader in (2, 3, 4) for p in (0, 1))

        wait_for(finished, 120, "the reassignment to complete", details=cluster.logs)
        with BlockingAdmin({"bootstrap.servers": bootstrap(cluster)}) as admin:
            assert wait_for(lambda: ongoing(admin) == [] or None, 30, "no ongoing moves")
        wait_for(lambda: not partition_dirs(cluster, 1, topic), 60,
                 "broker 1 to delete its copies", details=cluster.logs)
        assert len(partition_dirs(cluster, 4, topic)) == 2
        size = acked_file.stat().st_size
        wait_for(lambda: acked_file.stat().st_size > size + 20_000, 60,
                 "acks from the new replica set")
        stop_file.touch()
        output, _ = producer.communicate(timeout=240)
    finally:
        if paused:
            cluster.send_signal(4, signal.SIGCONT)
        if producer.poll() is None:
            producer.kill()
            producer.wait()
    assert producer.returncode == 0, output
    assert " errors 0 " in output, output
    acked: dict[int, int] = {}
    for line in acked_file.read_text().splitlines():
        partition, offset, number = map(int, line.split())
        acked[number] = offset
    log = read_partitions(bootstrap(cluster), topic, 2)
    where: dict[int, Any] = {n: o for records in log.values() for o, n in records}
    missing = [n for n in acked if n not in where]
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:5]}"
    assert all(where[n] == o for n, o in acked.items()), "an ack named another offset"
    numbers = [n for records in log.values() for _, n in records]
    assert len(numbers) == len(set(numbers)), "duplicates in the log"
