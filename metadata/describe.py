"""Read helpers over an image for the broker's Metadata responses: the entries of
MetadataResponse's message classes."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from clients.protocol import ZERO_UUID, ErrorCode
from clients.protocol.messages.metadata import MetadataResponseData
from metadata.image import BrokerRegistration, MetadataImage, PartitionRegistration, TopicImage
from metadata.records import NO_LEADER

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})

Broker = MetadataResponseData.MetadataResponseBroker
Topic = MetadataResponseData.MetadataResponseTopic
Partition = MetadataResponseData.MetadataResponsePartition


def live_brokers(image: MetadataImage) -> list[BrokerRegistration]:
    """Registered, unfenced brokers sorted by id (those shown to clients)."""
    return [reg for _, reg in sorted(image.brokers.items()) if not reg.fenced]


def metadata_brokers(image: MetadataImage, listener_name: str) -> list[Broker]:
    """MetadataResponseBroker entries for live brokers that have `listener_name`."""
    out = []
    for reg in live_brokers(image):
        ep = reg.endpoint(listener_name)
        if ep is not None:
            out.append(Broker(node_id=reg.broker_id, host=ep.host, port=ep.port, rack=reg.rack))
    return out


def offline_replicas(image: MetadataImage, part: PartitionRegistration) -> list[int]:
    """Replicas on brokers that are fenced or no longer registered."""
    out = []
    for b in part.replicas:
        reg = image.broker(b)
        if reg is None or reg.fenced:
            out.append(b)
    return out


def describe_partition(
    image: MetadataImage, partition_id: int, part: PartitionRegistration, listener_name: str | None = None
) -> Partition:
    """A MetadataResponsePartition; LEADER_NOT_AVAILABLE when the leader cannot be reached."""
    leader = part.leader
    reg = image.broker(leader) if leader != NO_LEADER else None
    reachable = reg is not None and not reg.fenced
    if reachable and listener_name is not None:
        reachable = reg is not None and reg.endpoint(listener_name) is not None
    return Partition(
        error_code=ErrorCode.NONE if reachable else ErrorCode.LEADER_NOT_AVAILABLE,
        partition_index=partition_id,
        leader_id=leader if reachable else NO_LEADER,
        leader_epoch=part.leader_epoch,
        replica_nodes=list(part.replicas),
        isr_nodes=list(part.isr),
        offline_replicas=offline_replicas(image, part),
    )


def describe_topic(
    image: MetadataImage, topic: TopicImage, listener_name: str | None = None
) -> Topic:
    """A MetadataResponseTopic for an existing topic, partitions in id order."""
    return Topic(
        error_code=ErrorCode.NONE,
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=topic.name in INTERNAL_TOPICS,
        partitions=[
            describe_partition(image, pid, topic.partitions[pid], listener_name)
            for pid in sorted(topic.partitions)
        ],
    )


def describe_topics(
    image: MetadataImage,
    names: Iterable[str] | None = None,
    listener_name: str | None = None,
) -> list[Topic]:
    """MetadataResponseTopics for `names` (all topics, sorted, when None); unknown names
    get UNKNOWN_TOPIC_OR_PARTITION."""
    if names is None:
        names = sorted(image.topics_by_name)
    out = []
    for name in names:
        topic = image.topic(name)
        out.append(
            describe_topic(image, topic, listener_name)
            if topic is not None
            else _missing(name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        )
    return out


def describe_topic_by_id(
    image: MetadataImage, topic_id: uuid.UUID, listener_name: str | None = None
) -> Topic:
    """A MetadataResponseTopic looked up by id; UNKNOWN_TOPIC_ID when absent."""
    topic = image.topic_by_id(topic_id)
    if topic is None:
        return _missing(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID)
    return describe_topic(image, topic, listener_name)


def _missing(name: str | None, topic_id: uuid.UUID, code: int) -> Topic:
    return Topic(error_code=code, name=name, topic_id=topic_id,
                 is_internal=name in INTERNAL_TOPICS if name else False)
