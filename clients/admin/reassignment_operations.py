"""Partition reassignment (KIP-455) as admin operations: start, cancel and list moves of
partitions' replicas between brokers.

Per-partition errors come back in the results rather than as exceptions, as Kafka's admin
client reports them per partition.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from clients.admin.operations import Call, Operation, TopicPartition, _fixed, _raise_for
from clients.protocol import ApiKey, ErrorCode

DEFAULT_REASSIGNMENT_TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class ReassignmentResult:
    """One partition's answer to AlterPartitionReassignments (error_code 0: accepted)."""

    topic: str
    partition: int
    error_code: int
    error_message: str | None


@dataclass(frozen=True)
class OngoingReassignment:
    """A partition being moved: its current replica set (the union of the old and the target
    replicas) and the replicas being added and removed."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for topic, partition in partitions:
        grouped.setdefault(topic, []).append(int(partition))
    return grouped


def alter_partition_reassignments(
        targets: Mapping[TopicPartition, Sequence[int] | None],
        timeout_ms: int = DEFAULT_REASSIGNMENT_TIMEOUT_MS) -> Operation:
    """Start (target replica list) or cancel (None) the reassignment of each partition."""
    topics: dict[str, list[dict]] = {}
    for (topic, partition), replicas in targets.items():
        topics.setdefault(topic, []).append({
            "partition_index": int(partition),
            "replicas": None if replicas is None else [int(r) for r in replicas]})
    if not topics:
        return []
    body = {"timeout_ms": timeout_ms,
            "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()]}
    # Any broker forwards it to the active controller, which may have just moved.
    response = yield Call(ApiKey.ALTER_PARTITION_REASSIGNMENTS, _fixed(body))
    top_code = int(response.get("error_code", 0))
    answered = [ReassignmentResult(t["name"], p["partition_index"], int(p["error_code"]),
                                   p.get("error_message"))
                for t in response.get("responses") or () for p in t["partitions"]]
    if top_code != ErrorCode.NONE and not answered:
        # A request-level failure (e.g. not authorized) applies to every partition asked.
        message = response.get("error_message") or ErrorCode.from_code(top_code).message
        answered = [ReassignmentResult(topic, partition, top_code, message)
                    for topic, partition in targets]
    return answered


def list_partition_reassignments(
        partitions: Iterable[TopicPartition] | None = None,
        timeout_ms: int = DEFAULT_REASSIGNMENT_TIMEOUT_MS) -> Operation:
    """The reassignments in progress, of `partitions` (None: of every partition)."""
    named = None
    if partitions is not None:
        named = [{"name": topic, "partition_indexes": indexes}
                 for topic, indexes in _by_topic(partitions).items()]
    body = {"timeout_ms": timeout_ms, "topics": named}
    response = yield Call(ApiKey.LIST_PARTITION_REASSIGNMENTS, _fixed(body))
    _raise_for(int(response.get("error_code", 0)), response.get("error_message"),
               "ListPartitionReassignments")
    ongoing = [OngoingReassignment(t["name"], p["partition_index"], tuple(p["replicas"]),
                                   tuple(p["adding_replicas"]), tuple(p["removing_replicas"]))
               for t in response["topics"] for p in t["partitions"]]
    return sorted(ongoing, key=lambda r: (r.topic, r.partition))
