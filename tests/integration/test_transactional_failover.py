"""Raftka's transactional producer in a consume-transform-produce loop while the
transaction coordinator's broker, then the leader of an output partition, are killed with
SIGKILL: the committed output equals the input exactly once and the group's committed
offsets match it."""

from __future__ import annotations

import time
from typing import Iterator

import pytest

from cluster.launcher.processes import LauncherError
from cluster.testing.cluster import RaftkaCluster, start_cluster
from cluster.testing.waiting import wait_for
from clients.admin import BlockingAdmin
from clients.consumer import BlockingConsumer
from clients.producer import BlockingProducer
from clients.protocol import ErrorCode, KafkaError
from tests.integration.test_transactional_clients import read

pytestmark = pytest.mark.slow

RECORDS = 600
TRANSACTIONAL_ID = "failover"


@pytest.fixture
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RaftkaCluster]:
    with start_cluster(tmp_path_factory.mktemp("txn-failover"), 3,
                       transaction_state_log_num_partitions=3) as started:
        yield started


def coordinator_of(cluster: RaftkaCluster) -> int:
    with BlockingAdmin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        described = admin.describe_transactions([TRANSACTIONAL_ID])[TRANSACTIONAL_ID]
    assert not isinstance(described, KafkaError), described
    return described.coordinator_id


def leader_of(cluster: RaftkaCluster, topic: str, partition: int) -> int:
    with BlockingAdmin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        (described,) = admin.describe_topics([topic])
    return next(p.leader for p in described.partitions if p.partition == partition)


def restart(cluster: RaftkaCluster, node: int) -> None:
    """Restart a killed node; a port of it may briefly be some connection's local port."""
    def started() -> bool:
        try:
            cluster.restart(node)
        except LauncherError as exc:
            if "already in use" not in str(exc):
                raise
            return False
        return True

    wait_for(started, f"node {node} to restart", 60)


def commit(producer: BlockingProducer) -> None:
    """commit_transaction, called again after a timeout, as Kafka's producer allows."""
    for _ in range(5):
        try:
            producer.commit_transaction()
            return
        except KafkaError as exc:
            if exc.code != ErrorCode.REQUEST_TIMED_OUT:
                raise
    raise AssertionError("commit_transaction kept timing out")


def test_output_is_exactly_once_across_coordinator_and_leader_kills(
        cluster: RaftkaCluster) -> None:
    cluster.create_topic("fo-in", 2, 3)
    cluster.create_topic("fo-out", 2, 3)
    bootstrap = cluster.bootstrap_servers
    with BlockingProducer({"bootstrap.servers": bootstrap}) as plain:
        for i in range(RECORDS):
            plain.send("fo-in", b"%d" % i, partition=i % 2)
    victims: list[int] = []
    committed_rounds = 0
    aborted_rounds = 0
    with BlockingConsumer({"bootstrap.servers": bootstrap, "group.id": "fo-group",
                           "enable.auto.commit": False, "auto.offset.reset": "earliest",
                           "isolation.level": "read_committed", "max.poll.records": 40,
                           "session.timeout.ms": 30000}) as consumer, \
            BlockingProducer({"bootstrap.servers": bootstrap,
                              "transactional.id": TRANSACTIONAL_ID,
                              "request.timeout.ms": 5000, "delivery.timeout.ms": 60000,
                              "max.block.ms": 30000}) as producer:
        producer.init_transactions()
        consumer.subscribe(["fo-in"])
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            positions = {tp: consumer.position(tp) for tp in consumer.assignment()}
            if len(positions) == 2 and all(p >= RECORDS // 2 for p in positions.values()):
                break
            records = consumer.poll(500)
            if not records:
                continue
            if committed_rounds == 3 and not victims:
                victims.append(coordinator_of(cluster))
                cluster.kill(victims[-1])
            elif committed_rounds == 8 and len(victims) == 1:
                restart(cluster, victims[0])
                victims.append(leader_of(cluster, "fo-out", 0))
                cluster.kill(victims[-1])
            elif committed_rounds == 12 and len(victims) == 2:
                restart(cluster, victims[1])
                victims.append(-1)
            try:
                producer.begin_transaction()
                for r in records:
                    producer.send("fo-out", b"out-" + (r.value or b""), partition=r.partition)
                positions = {tp: consumer.position(tp) for tp in consumer.assignment()}
                producer.send_offsets_to_transaction(positions, consumer.group_metadata())
                commit(producer)
                committed_rounds += 1
            except KafkaError as exc:
                if exc.code == ErrorCode.PRODUCER_FENCED:
                    raise
                # An abortable error: abort, then read again from the last commit.
                producer.abort_transaction()
                aborted_rounds += 1
                committed = consumer.committed(consumer.assignment())
                for tp in consumer.assignment():
                    consumer.seek(tp, committed.get(tp) or 0)
    assert len(victims) == 3, f"only {committed_rounds} rounds committed"
    out = read(cluster, "fo-out", "read_committed", RECORDS, partitions=2, timeout=60)
    assert sorted(out) == sorted(b"out-%d" % i for i in range(RECORDS)), (
        f"{len(out)} records, {len(set(out))} distinct; {aborted_rounds} rounds aborted")
    with BlockingConsumer({"bootstrap.servers": bootstrap, "group.id": "fo-group"}) as check:
        assert check.committed([("fo-in", 0), ("fo-in", 1)]) == {
            ("fo-in", 0): RECORDS // 2, ("fo-in", 1): RECORDS // 2}
