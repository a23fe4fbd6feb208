"""Which `__consumer_offsets` partition (and so which coordinator) owns a group."""

from __future__ import annotations

from broker.coordinator.routing import partition_for_key

CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"


def partition_for_group(group_id: str, num_partitions: int) -> int:
    """Kafka's `GroupCoordinator.partitionFor(groupId)`."""
    return partition_for_key(group_id, num_partitions)
