"""AllocateProducerIds and the Metadata-response read helpers."""

from __future__ import annotations

import uuid

from clients.protocol import ApiKey, ErrorCode, as_message
from clients.protocol.messages.metadata import MetadataResponseData
from metadata.controller.producer_ids import allocate_producer_ids
from metadata.describe import (
    describe_topic_by_id,
    describe_topics,
    live_brokers,
    metadata_brokers,
)
from tests.unit.metadata.controller.harness import Cluster


def test_producer_id_blocks_are_consecutive_and_replicated() -> None:
    c = Cluster()
    c.add_brokers(1, 2)
    starts = []
    for b in (1, 2, 1):
        request = {"broker_id": b, "broker_epoch": c.image.broker(b).epoch}
        records, response = allocate_producer_ids(c.image, as_message(ApiKey.ALLOCATE_PRODUCER_IDS, 0, request), c.now_ms, settings=c.settings)
        assert response.error_code == 0 and response.producer_id_len == 1000
        starts.append(response.producer_id_start)
        c.commit(records)
    assert starts == [0, 1000, 2000]
    assert c.image.next_producer_id == 3000


def test_producer_ids_with_stale_epoch() -> None:
    c = Cluster()
    c.add_brokers(1)
    for request in ({"broker_id": 1, "broker_epoch": 99}, {"broker_id": 7, "broker_epoch": 0}):
        records, response = allocate_producer_ids(c.image, as_message(ApiKey.ALLOCATE_PRODUCER_IDS, 0, request), c.now_ms, settings=c.settings)
        assert records == [] and response.error_code == ErrorCode.STALE_BROKER_EPOCH


def test_describe_topics_reports_leader_and_offline_replicas() -> None:
    c = Cluster()
    c.add_brokers(1, 2, 3)
    c.create_topic("t", assignments=[{"partition_index": 0, "broker_ids": [1, 2, 3]}], num_partitions=-1, replication_factor=-1)
    c.heartbeat(3, want_fence=True)
    (topic,) = describe_topics(c.image, ["t"])
    assert topic.error_code == 0 and topic.name == "t" and topic.is_internal is False
    (p,) = topic.partitions
    assert p == MetadataResponseData.MetadataResponsePartition(
        error_code=0, partition_index=0, leader_id=1, leader_epoch=0,
        replica_nodes=[1, 2, 3], isr_nodes=[1, 2], offline_replicas=[3],
    )
    assert [b.broker_id for b in live_brokers(c.image)] == [1, 2]
    Broker = MetadataResponseData.MetadataResponseBroker
    assert metadata_brokers(c.image, "PLAINTEXT") == [
        Broker(node_id=1, host="127.0.0.1", port=9093, rack=None),
        Broker(node_id=2, host="127.0.0.1", port=9094, rack=None),
    ]
    assert metadata_brokers(c.image, "SSL") == []


def test_describe_leaderless_and_unknown() -> None:
    c = Cluster()
    c.add_brokers(1)
    c.create_topic("t")
    c.heartbeat(1, want_fence=True)
    (topic,) = describe_topics(c.image)
    assert topic.partitions[0].error_code == ErrorCode.LEADER_NOT_AVAILABLE
    assert topic.partitions[0].leader_id == -1
    (missing,) = describe_topics(c.image, ["nope"])
    assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert describe_topic_by_id(c.image, uuid.uuid4()).error_code == ErrorCode.UNKNOWN_TOPIC_ID
    tid = c.image.topic("t").topic_id
    assert describe_topic_by_id(c.image, tid).name == "t"


def test_producer_id_space_exhausted() -> None:
    from metadata.records import ProducerIdsRecord

    c = Cluster()
    c.add_brokers(1)
    c.commit([ProducerIdsRecord(broker_id=1, broker_epoch=0, next_producer_id=2**63 - 500)])
    request = {"broker_id": 1, "broker_epoch": c.image.broker(1).epoch}
    records, response = allocate_producer_ids(c.image, as_message(ApiKey.ALLOCATE_PRODUCER_IDS, 0, request), c.now_ms, settings=c.settings)
    assert records == [] and response.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
