"""Errors of partition-level checks, each carrying the Kafka error code to answer with."""

from __future__ import annotations

from clients.protocol import ErrorCode


class ReplicaError(Exception):
    """A request cannot be served by this replica; `error_code` is Kafka's wire code."""

    error_code: int = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, message: str, error_code: int | None = None) -> None:
        super().__init__(message)
        if error_code is not None:
            self.error_code = int(error_code)


class UnknownTopicOrPartition(ReplicaError):
    error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class OfflineReplica(ReplicaError):
    """The replica's log directory failed: answered before any leadership check, as
    Kafka's offline partitions are, whoever leads the partition now."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class NotLeaderOrFollower(ReplicaError):
    error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER


class FencedLeaderEpoch(ReplicaError):
    error_code = ErrorCode.FENCED_LEADER_EPOCH


class UnknownLeaderEpoch(ReplicaError):
    error_code = ErrorCode.UNKNOWN_LEADER_EPOCH


class NotEnoughReplicas(ReplicaError):
    error_code = ErrorCode.NOT_ENOUGH_REPLICAS


class OffsetNotAvailable(ReplicaError):
    error_code = ErrorCode.OFFSET_NOT_AVAILABLE
