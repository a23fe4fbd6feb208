"""`__consumer_offsets`: the settings it is created with, and which partition (so which
coordinator) owns a group."""

from __future__ import annotations

from typing import Any

from broker.coordinator.routing import partition_for_key
from broker.coordinator.topic import InternalTopicSettings

CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"


def offsets_topic_settings(config: Any) -> InternalTopicSettings:
    """The `offsets.topic.*` settings, with Kafka's offsets topic configs."""
    return InternalTopicSettings(
        CONSUMER_OFFSETS_TOPIC, config.offsets_topic_num_partitions,
        config.offsets_topic_replication_factor,
        (("cleanup.policy", "compact"), ("compression.type", "producer"),
         ("segment.bytes", str(config.offsets_topic_segment_bytes))),
        replication_factor_key="offsets.topic.replication.factor",
        users="consumer groups get no coordinator")


def partition_for_group(group_id: str, num_partitions: int) -> int:
    """Kafka's `GroupCoordinator.partitionFor(groupId)`."""
    return partition_for_key(group_id, num_partitions)
