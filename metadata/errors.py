"""Kafka error codes used by the controller's decisions, and metadata exceptions.

Only the handful the controller returns are defined here, with Kafka's numbers; the full
protocol-level enum lives with the wire codec, which `metadata` must not import.
"""

from __future__ import annotations

UNKNOWN_SERVER_ERROR = -1
NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
NOT_LEADER_OR_FOLLOWER = 6
INVALID_TOPIC_EXCEPTION = 17
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_CONFIG = 40
INVALID_REQUEST = 42
UNSUPPORTED_VERSION = 35
TOPIC_DELETION_DISABLED = 73
FENCED_LEADER_EPOCH = 74
STALE_BROKER_EPOCH = 77
INVALID_UPDATE_VERSION = 95
UNKNOWN_TOPIC_ID = 100
DUPLICATE_BROKER_REGISTRATION = 101
BROKER_ID_NOT_REGISTERED = 102
INCONSISTENT_CLUSTER_ID = 104
INELIGIBLE_REPLICA = 107


class MetadataRecordError(ValueError):
    """A metadata record could not be encoded or decoded."""


class MetadataReplayError(MetadataRecordError):
    """A record is inconsistent with the image it is replayed onto (e.g. unknown topic id)."""
