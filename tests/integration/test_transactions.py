"""Transactions end to end with librdkafka's transactional producer (confluent-kafka), on
clusters started as scripts/bootstrap-quorum starts them: commit and abort seen through
read_committed and read_uncommitted consumers, the last stable offset held back by open
transactions, zombie fencing, and the coordinator aborting a transaction past its timeout.
"""

from __future__ import annotations

import time
from typing import Any, Iterator

import pytest

from broker.testing.cluster import RaftkaCluster, start_cluster
from broker.testing.waiting import wait_for

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.slow

TXN_SETTINGS = {"transaction_state_log_num_partitions": 3,
                "transaction_abort_timed_out_transaction_cleanup_interval_ms": 500}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RaftkaCluster]:
    with start_cluster(tmp_path_factory.mktemp("txn"), 3, **TXN_SETTINGS) as started:
        yield started


def producer(cluster: RaftkaCluster, transactional_id: str, **extra: Any) -> Any:
    config = {"bootstrap.servers": cluster.bootstrap_servers,
              "transactional.id": transactional_id, "broker.address.family": "v4",
              "linger.ms": 5, **extra}
    return confluent_kafka.Producer(config)


def consume(cluster: RaftkaCluster, topic: str, isolation: str, expected: int,
            partitions: int = 1, timeout: float = 30.0) -> list[bytes]:
    """Values of `topic` from the start, read with `isolation`, until `expected` arrived (or
    the timeout: the caller's assertion then says what was missing)."""
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": cluster.bootstrap_servers, "group.id": f"read-{topic}-{isolation}",
        "isolation.level": isolation, "enable.auto.commit": False,
        "broker.address.family": "v4", "auto.offset.reset": "earliest"})
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in range(partitions)])
        values: list[bytes] = []
        deadline = time.monotonic() + timeout
        while len(values) < expected and time.monotonic() < deadline:
            for msg in consumer.consume(500, timeout=0.2):
                if msg.error() is None:
                    values.append(msg.value())
        return values
    finally:
        consumer.close()


def end_offsets(cluster: RaftkaCluster, topic: str, isolation: str) -> int:
    """The high watermark (read_uncommitted) or last stable offset (read_committed) of
    partition 0, as a client sees it."""
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": cluster.bootstrap_servers, "group.id": "offsets-probe",
        "isolation.level": isolation, "broker.address.family": "v4"})
    try:
        return consumer.get_watermark_offsets(confluent_kafka.TopicPartition(topic, 0),
                                              timeout=10, cached=False)[1]
    finally:
        consumer.close()


def test_committed_is_visible_to_read_committed_and_aborted_never(cluster: RaftkaCluster):
    cluster.create_topic("txn-basic", 1, 3)
    p = producer(cluster, "basic")
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(10):
        p.produce("txn-basic", b"committed-%d" % i)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(10):
        p.produce("txn-basic", b"aborted-%d" % i)
    p.flush(30)
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce("txn-basic", b"last")
    p.commit_transaction(30)

    committed = consume(cluster, "txn-basic", "read_committed", 11)
    assert committed == [b"committed-%d" % i for i in range(10)] + [b"last"]
    uncommitted = consume(cluster, "txn-basic", "read_uncommitted", 21)
    assert uncommitted == ([b"committed-%d" % i for i in range(10)]
                           + [b"aborted-%d" % i for i in range(10)] + [b"last"])
