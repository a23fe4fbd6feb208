"""Consume-transform-produce with librdkafka (confluent-kafka) on a three-node cluster started
as scripts/bootstrap-quorum starts it: the transaction coordinator's broker and an output
partition's leader are killed (SIGKILL) mid-stream; the output still holds each input
record exactly once and the group's committed offsets are the input's end offsets.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections import Counter
from typing import Any, Callable, Iterator

import pytest

from cluster.testing.cluster import RaftkaCluster, start_cluster
from cluster.testing.waiting import wait_for
from clients.net import BlockingKafkaConnection
from clients.protocol import ApiKey

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.slow

# RAFTKA_TEST_RDKAFKA_DEBUG=eos,protocol,broker,cgrp turns on librdkafka's debug contexts for
# every client of the test; the log goes to librdkafka.log in the test's temporary directory
# (written by librdkafka itself, so a client stuck inside a call still leaves its trace).
RDKAFKA_DEBUG = os.environ.get("RAFTKA_TEST_RDKAFKA_DEBUG", "")

PARTITIONS = 3
RECORDS = 3000
GROUP = "eos-pipeline"
TRANSACTIONAL_ID = "eos-pipeline-1"


@pytest.fixture
def cluster(tmp_path: Any) -> Iterator[RaftkaCluster]:
    with start_cluster(tmp_path, 3, transaction_state_log_num_partitions=3,
                       offsets_topic_num_partitions=3) as started:
        yield started


@contextlib.contextmanager
def librdkafka_log(path: Any) -> Iterator[None]:
    """With RDKAFKA_DEBUG set, file descriptor 2 (where librdkafka's default logger writes)
    goes to `path` inside the block. Entered in the test's body: pytest points the
    descriptor at its own capture file again at the start of each test phase."""
    if not RDKAFKA_DEBUG:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "ab", buffering=0) as log:
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def client_config(cluster: RaftkaCluster, **extra: Any) -> dict[str, Any]:
    # A killed coordinator stays the answer to FindCoordinator until the controller fences
    # its broker (broker.session.timeout.ms after the kill, counted from the new controller's
    # election when it was also the active controller). librdkafka asks again only after
    # each failed attempt to reach it, and its reconnect backoff grows to 10 s by default, so
    # it could learn the new coordinator 10 s after the move, a third of the transaction's
    # timeout gone to waiting. A 1 s ceiling keeps the client's share of the failover small.
    return {"bootstrap.servers": cluster.bootstrap_servers, "broker.address.family": "v4",
            "reconnect.backoff.max.ms": 1000, **debug_config(), **extra}


def debug_config() -> dict[str, Any]:
    """librdkafka's debug contexts at log level 7 when asked for, else no logging."""
    if RDKAFKA_DEBUG:
        return {"debug": RDKAFKA_DEBUG, "log_level": 7}
    return {"log_level": 0}


def transaction_coordinator(cluster: RaftkaCluster) -> int:
    """The broker FindCoordinator names for the pipeline's transactional id."""
    def find() -> int | None:
        for node in cluster.running():
            port = cluster.info.node(node).client_port
            try:
                with BlockingKafkaConnection("127.0.0.1", port, client_id="eos-test") as conn:
                    answer = conn.request(ApiKey.FIND_COORDINATOR,
                                          {"key": TRANSACTIONAL_ID, "key_type": 1}, 3)
            except Exception:  # that node is restarting
                continue
            if answer["error_code"] == 0:
                return int(answer["node_id"])
        return None
    return wait_for(find, "the transaction coordinator to be known")


def leader_of(cluster: RaftkaCluster, topic: str, partition: int) -> int:
    with cluster.admin() as admin:
        described = admin.describe_topics([topic])
    return next(p.leader for p in described[0].partitions if p.partition == partition)


class Pipeline:
    """The read-process-write loop of an exactly-once application: each batch read from
    `eos-in` goes to `eos-out` (same partition) in one transaction with its offsets."""

    def __init__(self, cluster: RaftkaCluster) -> None:
        self.cluster = cluster
        self.consumer = confluent_kafka.Consumer(client_config(
            cluster, **{"group.id": GROUP, "enable.auto.commit": False,
                        "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                        "session.timeout.ms": 10000}))
        self.consumer.subscribe(["eos-in"])
        # librdkafka (2.16 and earlier, confluentinc/librdkafka#5511) sends TxnOffsetCommit
        # through the group coordinator it has cached; while that broker is down it waits for
        # some connection of the producer to change state before it asks FindCoordinator
        # again. Once the controller fences the killed broker, Metadata leaves it out (as
        # Kafka's does) and librdkafka drops that broker for good, so nothing may change state
        # any more and send_offsets_to_transaction never returns. Closing connections idle for
        # 5 s gives it those changes.
        self.producer = confluent_kafka.Producer(client_config(
            cluster, **{"transactional.id": TRANSACTIONAL_ID, "linger.ms": 5,
                        "transaction.timeout.ms": 30000, "connections.max.idle.ms": 5000}))
        self.producer.init_transactions(60)
        self.committed_transactions = 0
        self.aborted_transactions = 0

    def rewind(self) -> None:
        """Back to the last committed offsets (the aborted batch is read again)."""
        assignment = self.consumer.assignment()
        if not assignment:
            return
        for tp in self.consumer.committed(assignment, timeout=30):
            offset = tp.offset if tp.offset >= 0 else confluent_kafka.OFFSET_BEGINNING
            self.consumer.seek(confluent_kafka.TopicPartition(tp.topic, tp.partition, offset))

    def step(self, before_commit: Callable[[], None] | None = None) -> int:
        """One transaction (or none when nothing arrived); how many records it committed.
        `before_commit` runs with the transaction's records sent, before it is committed."""
        messages = [m for m in self.consumer.consume(200, timeout=1.0) if m.error() is None]
        if not messages:
            return 0
        self.producer.begin_transaction()
        try:
            for m in messages:
                self.producer.produce("eos-out", m.value(), m.key(), partition=m.partition())
            positions = self.consumer.position(self.consumer.assignment())
            self.producer.flush(60)
            if before_commit is not None:
                before_commit()
            self.producer.send_offsets_to_transaction(
                positions, self.consumer.consumer_group_metadata(), 60)
            self.commit()
        except confluent_kafka.KafkaException as exc:
            error = exc.args[0]
            if not error.txn_requires_abort():
                raise
            self.producer.abort_transaction(60)
            self.aborted_transactions += 1
            self.rewind()
            return 0
        self.committed_transactions += 1
        return len(messages)

    def commit(self) -> None:
        while True:
            try:
                self.producer.commit_transaction(60)
                return
            except confluent_kafka.KafkaException as exc:
                if not exc.args[0].retriable():
                    raise

    def close(self) -> None:
        self.consumer.close()
        self.producer.flush(10)


def produce_input(cluster: RaftkaCluster) -> None:
    producer = confluent_kafka.Producer(client_config(cluster, **{"acks": "all"}))
    for i in range(RECORDS):
        producer.produce("eos-in", b"record-%d" % i, b"key-%d" % i, partition=i % PARTITIONS)
    assert producer.flush(30) == 0


def read_output(cluster: RaftkaCluster) -> list[Any]:
    consumer = confluent_kafka.Consumer(client_config(
        cluster, **{"group.id": "eos-verify", "isolation.level": "read_committed",
                    "enable.auto.commit": False}))
    try:
        consumer.assign([confluent_kafka.TopicPartition("eos-out", p, 0)
                         for p in range(PARTITIONS)])
        out: list[Any] = []
        deadline = time.monotonic() + 60
        # Read past RECORDS for a while, so a duplicate would be seen.
        quiet_until = None
        while time.monotonic() < deadline:
            batch = [m for m in consumer.consume(500, timeout=0.5) if m.error() is None]
            out.extend(batch)
            if len(out) >= RECORDS and not batch:
                quiet_until = quiet_until or time.monotonic() + 3
                if time.monotonic() >= quiet_until:
                    break
        return out
    finally:
        consumer.close()


def test_output_equals_input_exactly_once_across_kills(cluster: RaftkaCluster,
                                                       tmp_path: Any) -> None:
    with librdkafka_log(tmp_path / "librdkafka.log"):
        run_pipeline_across_kills(cluster)


def run_pipeline_across_kills(cluster: RaftkaCluster) -> None:
    cluster.create_topic("eos-in", PARTITIONS, 3)
    cluster.create_topic("eos-out", PARTITIONS, 3)
    produce_input(cluster)
    pipeline = Pipeline(cluster)
    done = 0
    deadline = time.monotonic() + 300
    killed: list[int] = []

    def kill_coordinator() -> None:
        # An open transaction with data in the output: its coordinator dies before EndTxn.
        killed.append(transaction_coordinator(cluster))
        cluster.kill(killed[-1])

    def kill_output_leader() -> None:
        killed.append(leader_of(cluster, "eos-out", 1))
        cluster.kill(killed[-1])

    try:
        while done < RECORDS:
            assert time.monotonic() < deadline, f"{done} of {RECORDS}, killed {killed}"
            before_commit = None
            if not killed and done >= RECORDS // 4:
                before_commit = kill_coordinator
            elif len(killed) == 1 and done >= RECORDS // 2:
                cluster.restart(killed[0])
                cluster.wait_for_isr("eos-out", 3)
                cluster.wait_for_isr("eos-in", 3)
                before_commit = kill_output_leader
            done += pipeline.step(before_commit)
    finally:
        pipeline.close()
    assert len(killed) == 2

    out = read_output(cluster)
    values = Counter(m.value() for m in out)
    duplicates = [v for v, n in values.items() if n > 1]
    assert not duplicates, f"{len(duplicates)} duplicated, e.g. {duplicates[:3]}"
    assert set(values) == {b"record-%d" % i for i in range(RECORDS)}
    for m in out:  # the same partition, in input order
        assert int(m.key().split(b"-")[1]) % PARTITIONS == m.partition()

    verify = confluent_kafka.Consumer(client_config(
        cluster, **{"group.id": GROUP, "isolation.level": "read_committed"}))
    try:
        committed = verify.committed([confluent_kafka.TopicPartition("eos-in", p)
                                      for p in range(PARTITIONS)], timeout=30)
    finally:
        verify.close()
    assert {tp.partition: tp.offset for tp in committed} == {
        p: RECORDS // PARTITIONS for p in range(PARTITIONS)}
