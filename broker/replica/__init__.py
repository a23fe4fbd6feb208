"""Partition replicas on this broker: leadership state from metadata, the HW, waiters."""

from broker.replica.errors import (
    FencedLeaderEpoch,
    NotEnoughReplicas,
    NotLeaderOrFollower,
    OffsetNotAvailable,
    ReplicaError,
    UnknownLeaderEpoch,
    UnknownTopicOrPartition,
)
from broker.replica.manager import FollowerListener, ReplicaManager, TopicPartition
from broker.replica.partition import Partition

__all__ = [
    "FencedLeaderEpoch",
    "FollowerListener",
    "NotEnoughReplicas",
    "NotLeaderOrFollower",
    "OffsetNotAvailable",
    "Partition",
    "ReplicaError",
    "ReplicaManager",
    "TopicPartition",
    "UnknownLeaderEpoch",
    "UnknownTopicOrPartition",
]
