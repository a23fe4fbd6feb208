"""Errors of partition-level checks, each carrying the Kafka error code to answer with, and
the mapping of every error the replica manager lets through to its Kafka error code (request
handlers map errors with these, without reaching into the log layer)."""

from __future__ import annotations

from broker.log.errors import LogError, OffsetOutOfRange
from clients.protocol import ErrorCode

__all__ = ["FencedLeaderEpoch", "NotEnoughReplicas", "NotLeaderOrFollower", "OfflineReplica",
           "OffsetNotAvailable", "OffsetOutOfRange", "PARTITION_ERRORS", "ReplicaError",
           "UnknownLeaderEpoch", "UnknownTopicOrPartition", "error_code_of"]


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


# Failures answered per partition (the log's and the replica's); anything else is a bug and
# propagates.
PARTITION_ERRORS = (LogError, ReplicaError)


def error_code_of(exc: BaseException) -> int:
    """The Kafka error code for a log or replica error (UNKNOWN_SERVER_ERROR otherwise)."""
    if isinstance(exc, PARTITION_ERRORS):
        return int(exc.error_code)
    return int(ErrorCode.UNKNOWN_SERVER_ERROR)
