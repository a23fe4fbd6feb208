"""A broker whose controller session has lapsed stops naming itself leader in Metadata."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import trio

from broker.apis.metadata import MetadataHandlers
from clients.protocol import ApiKey, ErrorCode, as_message
from metadata.delta import apply_records
from metadata.image import MetadataImage
from metadata.records import (BrokerEndpoint, PartitionRecord, RegisterBrokerRecord,
                              TopicRecord)

TOPIC_ID = uuid.uuid4()


def image() -> MetadataImage:
    records: list = [RegisterBrokerRecord(
        broker_id=b, incarnation_id=uuid.uuid4(), broker_epoch=1,
        end_points=(BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9090 + b, 0),), fenced=False)
        for b in (1, 2)]
    records.append(TopicRecord(name="t", topic_id=TOPIC_ID))
    records += [PartitionRecord(partition_id=p, topic_id=TOPIC_ID, replicas=(1, 2), isr=(1, 2),
                                leader=leader, leader_epoch=3, partition_epoch=0)
                for p, leader in ((0, 1), (1, 2))]
    return apply_records(MetadataImage.empty(), records)[1]


def leaders(lapsed: bool) -> dict[int, tuple[int, int]]:
    handlers = MetadataHandlers(image, "c", broker_id=1, session_lapsed=lambda: lapsed)
    body = as_message(ApiKey.METADATA, 12, {"topics": [{"name": "t"}]})
    request = SimpleNamespace(body=body, api_version=12)
    ctx = SimpleNamespace(listener_name="PLAINTEXT")
    response = trio.run(handlers.handle_metadata, request, ctx)
    [topic] = response.topics
    return {p.partition_index: (p.leader_id, p.error_code) for p in topic.partitions}


def test_a_lapsed_broker_answers_its_own_partitions_as_leaderless() -> None:
    assert leaders(lapsed=False) == {0: (1, ErrorCode.NONE), 1: (2, ErrorCode.NONE)}
    # Broker 1 has been fenced by now, its leaderships moved: it names no leader for
    # them, and still names broker 2 for the partition broker 2 leads.
    assert leaders(lapsed=True) == {0: (-1, ErrorCode.LEADER_NOT_AVAILABLE),
                                    1: (2, ErrorCode.NONE)}
