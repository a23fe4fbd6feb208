"""Transactions on partition leaders with real node processes, without a transaction
coordinator: transactional batches and WriteTxnMarkers are sent through the request layer as
a coordinator would, and confluent-kafka and kafka-python consumers read with each isolation
level, also after the leader is killed."""

from __future__ import annotations

import time
from typing import Any, Callable

import pytest

from clients.protocol import ApiKey
from clients.protocol.errors import ErrorCode
from clients.records.batch import Record, encode_batch
from tests.integration.quorum_helpers import (
    HOST,
    QuorumCluster,
    create_topics,
    metadata,
    partition_views,
    send,
    start_cluster,  # noqa: F401  (fixture)
    wait_for,
)
from tests.unit.broker.log.helpers import batch

pytestmark = pytest.mark.slow

TOPIC = "txn-data"
TXN_ID = "txn-markers-test"
COMMITTED, ABORTED, OPEN = 1000, 2000, 3000  # producer ids


def _records(values: list[bytes]) -> list[Record]:
    now = int(time.time() * 1000)
    return [Record(None, now, None, v) for v in values]


def produce(port: int, data: bytes, transactional: bool) -> dict[str, Any]:
    response = send(port, ApiKey.PRODUCE, {
        "transactional_id": TXN_ID if transactional else None, "acks": -1, "timeout_ms": 10_000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": data}]}]},
        timeout=15)
    assert response is not None, "the leader did not answer Produce"
    entry: dict[str, Any] = response["responses"][0]["partition_responses"][0]
    assert entry["error_code"] == 0, entry
    return entry


def produce_txn(port: int, pid: int, values: list[bytes]) -> None:
    produce(port, encode_batch(_records(values), producer_id=pid, producer_epoch=0, base_sequence=0,
                               is_transactional=True), transactional=True)


def write_markers(port: int, results: dict[int, bool], coordinator_epoch: int = 1) -> list[int]:
    """WriteTxnMarkers {producer id: committed} for partition 0; the error codes."""
    response = send(port, ApiKey.WRITE_TXN_MARKERS, {"markers": [
        {"producer_id": pid, "producer_epoch": 0, "transaction_result": committed,
         "coordinator_epoch": coordinator_epoch, "topics": [{"name": TOPIC, "partition_indexes": [0]}]}
        for pid, committed in results.items()]}, timeout=40)
    assert response is not None, "the leader did not answer WriteTxnMarkers"
    return [m["topics"][0]["partitions"][0]["error_code"] for m in response["markers"]]


def latest(port: int, isolation_level: int) -> int | None:
    response = send(port, ApiKey.LIST_OFFSETS, {"replica_id": -1, "isolation_level": isolation_level,
                                                "topics": [{"name": TOPIC, "partitions": [
                                                    {"partition_index": 0, "timestamp": -1}]}]})
    if response is None:
        return None
    entry = response["topics"][0]["partitions"][0]
    return int(entry["offset"]) if entry["error_code"] == 0 else None


def read_values(port: int, isolation: str, end: int) -> list[bytes]:
    """Every value a confluent-kafka consumer with `isolation` gets until its position reaches
    `end` (control records and aborted batches move it without being delivered)."""
    import confluent_kafka

    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": f"{HOST}:{port}", "group.id": f"verify-{isolation}",
        "enable.auto.commit": False, "isolation.level": isolation})
    partition = confluent_kafka.TopicPartition(TOPIC, 0, 0)
    consumer.assign([partition])
    values: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            for message in consumer.consume(100, timeout=0.5):
                if message.error() is None:
                    values.append(message.value())
            if consumer.position([partition])[0].offset >= end:
                return values
        pytest.fail(f"{isolation} consumer stopped at {consumer.position([partition])[0].offset}, "
                    f"not {end}; read {values}")
    finally:
        consumer.close()
    return values


def read_values_kafka_python(port: int, end: int) -> list[bytes]:
    """:func:`read_values` with a kafka-python read_committed consumer."""
    import kafka

    consumer = kafka.KafkaConsumer(bootstrap_servers=f"{HOST}:{port}", group_id=None,
                                   enable_auto_commit=False, isolation_level="read_committed")
    partition = kafka.TopicPartition(TOPIC, 0)
    consumer.assign([partition])
    consumer.seek(partition, 0)
    values: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                values.extend(r.value for r in records)
            if consumer.position(partition) >= end:
                return values
        pytest.fail(f"kafka-python stopped at {consumer.position(partition)}, not {end}; read {values}")
    finally:
        consumer.close()
    return values


def leader_of(cluster: QuorumCluster, brokers: list[int], exclude: int | None = None) -> int | None:
    for broker in brokers:
        if broker == exclude:
            continue
        response = metadata(cluster.client_port(broker), timeout=2.0)
        view = partition_views(response).get((TOPIC, 0)) if response else None
        if view is not None and view.leader >= 0 and view.leader != exclude:
            return view.leader
    return None


def test_read_committed_follows_markers_across_a_leader_kill(
        start_cluster: Callable[..., QuorumCluster]) -> None:
    # No coordinator drives these transactions, so none can vouch for them (KIP-890).
    cluster = start_cluster(3, controllers=1,
                            overrides={"transaction.partition.verification.enable": "false"})
    brokers = cluster.broker_ids
    create_topics(cluster.client_port(brokers[0]), {TOPIC: (1, 3)}, configs={"min.insync.replicas": "2"})

    def full_isr() -> int | None:
        response = metadata(cluster.client_port(brokers[0]), timeout=2.0)
        view = partition_views(response).get((TOPIC, 0)) if response else None
        return view.leader if view is not None and len(view.isr) == 3 else None

    leader = wait_for(full_isr, 30, "a full ISR", details=cluster.logs)
    port = cluster.client_port(leader)
    produce(port, bytes(batch([b"p0"])), transactional=False)          # 0
    produce_txn(port, COMMITTED, [b"a1", b"a2"])                        # 1-2
    produce_txn(port, ABORTED, [b"b1"])                                 # 3
    produce(port, bytes(batch([b"p1"])), transactional=False)          # 4
    produce_txn(port, OPEN, [b"c1"])                                    # 5
    assert latest(port, 0) == 6
    assert latest(port, 1) == 1
    assert read_values(port, "read_committed", 1) == [b"p0"]

    assert write_markers(port, {COMMITTED: True, ABORTED: False}) == [0, 0]   # 6, 7
    assert latest(port, 0) == 8
    assert latest(port, 1) == 5, "the open transaction holds the LSO"
    assert read_values(port, "read_committed", 5) == [b"p0", b"a1", b"a2", b"p1"]
    assert read_values_kafka_python(port, 5) == [b"p0", b"a1", b"a2", b"p1"]
    assert read_values(port, "read_uncommitted", 8) == [b"p0", b"a1", b"a2", b"b1", b"p1", b"c1"]

    # The followers built the same transaction state from the replicated batches.
    cluster.kill(leader)
    new_leader = wait_for(lambda: leader_of(cluster, [b for b in brokers if b != leader], leader), 30,
                          "a new leader", details=cluster.logs)
    port = cluster.client_port(new_leader)
    wait_for(lambda: latest(port, 1) == 5 or None, 30, "the new leader to answer the LSO")
    assert read_values(port, "read_committed", 5) == [b"p0", b"a1", b"a2", b"p1"]
    assert write_markers(port, {OPEN: False}) == [0]
    assert latest(port, 1) == latest(port, 0) == 9
    assert read_values(port, "read_committed", 9) == [b"p0", b"a1", b"a2", b"p1"]
    assert read_values_kafka_python(port, 9) == [b"p0", b"a1", b"a2", b"p1"]

    # The killed leader recovers its log (and its aborted-transaction index) on restart.
    cluster.restart(leader)
    wait_for(full_isr, 60, "the old leader to rejoin the ISR", details=cluster.logs)
    # A coordinator epoch older than the partition has seen is fenced.
    assert write_markers(port, {OPEN: False}, coordinator_epoch=0) == [
        ErrorCode.TRANSACTION_COORDINATOR_FENCED]
