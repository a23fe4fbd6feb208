"""OffsetCommit and OffsetFetch bodies and their answers, without I/O.

Bodies carry the fields of every version (the codec writes only those of the version it
negotiates), so one body serves old and new brokers alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterable, Mapping

from clients.consumer.group.protocol import TopicPartition, group_by_topic
from clients.protocol import ErrorCode, KafkaError


class CommitFailedError(KafkaError):
    """The group rebalanced (or dropped this member) before the commit: the partitions may
    now belong to another member, so the offsets were not stored."""


class ErrorAction(Enum):
    """What a consumer should do about a group request's error code."""

    DONE = "done"
    RETRY = "retry"                  # after the backoff, same coordinator
    FIND_COORDINATOR = "find"        # the coordinator moved or is gone: look it up again
    REJOIN = "rejoin"                # the group is rebalancing: join again
    RESET_AND_REJOIN = "reset"       # the member or generation is stale: join as new
    FATAL = "fatal"


_COORDINATOR_GONE = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                               ErrorCode.REQUEST_TIMED_OUT})


def classify(code: ErrorCode) -> ErrorAction:
    """Kafka's consumer reaction to a group-related error code."""
    if code == ErrorCode.NONE:
        return ErrorAction.DONE
    if code in _COORDINATOR_GONE:
        return ErrorAction.FIND_COORDINATOR
    if code == ErrorCode.REBALANCE_IN_PROGRESS:
        return ErrorAction.REJOIN
    if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION,
                ErrorCode.FENCED_MEMBER_EPOCH):
        return ErrorAction.RESET_AND_REJOIN
    if code == ErrorCode.STALE_MEMBER_EPOCH:
        # The consumer protocol: the commit's epoch is behind the member's.
        return ErrorAction.REJOIN
    if code.retriable:
        return ErrorAction.RETRY
    return ErrorAction.FATAL


def offset_commit_request(group_id: str, generation_id: int, member_id: str,
                          group_instance_id: str | None,
                          offsets: Mapping[TopicPartition, int]) -> dict[str, Any]:
    """Commit ``offsets`` (the next offset to read, per partition) for this generation."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append({
            "partition_index": partition, "committed_offset": offset,
            "committed_leader_epoch": -1, "committed_metadata": ""})
    return {"group_id": group_id, "generation_id_or_member_epoch": generation_id,
            "member_id": member_id, "group_instance_id": group_instance_id,
            "retention_time_ms": -1,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}


def offset_commit_errors(response: Mapping[str, Any]) -> dict[TopicPartition, ErrorCode]:
    """The partitions whose commit failed, with their error."""
    failed: dict[TopicPartition, ErrorCode] = {}
    for topic in response.get("topics", ()):
        for p in topic["partitions"]:
            code = ErrorCode.from_code(p["error_code"])
            if code != ErrorCode.NONE:
                failed[(topic["name"], p["partition_index"])] = code
    return failed


def offset_fetch_request(group_id: str, partitions: Iterable[TopicPartition],
                         member_id: str | None = None, member_epoch: int = -1
                         ) -> dict[str, Any]:
    """``member_id``/``member_epoch`` (v9): a member of a consumer-protocol group."""
    topics = [{"name": t, "partition_indexes": ps} for t, ps in group_by_topic(partitions).items()]
    return {"group_id": group_id, "topics": topics, "require_stable": True,
            "groups": [{"group_id": group_id, "member_id": member_id,
                        "member_epoch": member_epoch, "topics": topics}]}


@dataclass(frozen=True)
class FetchedOffsets:
    """An OffsetFetch answer: committed offsets (None where nothing is committed) or the
    error that stopped it."""

    offsets: dict[TopicPartition, int | None]
    error: ErrorCode = ErrorCode.NONE


def parse_offset_fetch(response: Mapping[str, Any]) -> FetchedOffsets:
    if response.get("groups"):
        group = response["groups"][0]
        top_error, topics = group.get("error_code", 0), group.get("topics", ())
    else:
        top_error, topics = response.get("error_code", 0), response.get("topics", ())
    code = ErrorCode.from_code(top_error)
    offsets: dict[TopicPartition, int | None] = {}
    for topic in topics:
        for p in topic["partitions"]:
            p_code = ErrorCode.from_code(p["error_code"])
            if p_code != ErrorCode.NONE and code == ErrorCode.NONE:
                code = p_code
            offset = p["committed_offset"]
            offsets[(topic["name"], p["partition_index"])] = offset if offset >= 0 else None
    return FetchedOffsets(offsets, code)
