"""DescribeTopicPartitions (KIP-966) paging over an image: topics in name order, at most
`limit` partitions per response, and the cursor where the next page starts."""

from __future__ import annotations

from typing import Any, Sequence

from clients.protocol import ZERO_UUID, ErrorCode
from metadata.describe import INTERNAL_TOPICS, describe_partition
from metadata.image import MetadataImage

_UNKNOWN_OPERATIONS = -2147483648


def _error_topic(name: str, code: int) -> dict[str, Any]:
    return {"error_code": code, "name": name, "topic_id": ZERO_UUID,
            "is_internal": name in INTERNAL_TOPICS, "partitions": [],
            "topic_authorized_operations": _UNKNOWN_OPERATIONS}


def _partition(image: MetadataImage, pid: int, part: Any, listener: str | None) -> dict:
    entry = describe_partition(image, pid, part, listener)
    entry["eligible_leader_replicas"] = None
    entry["last_known_elr"] = None
    return entry


def topic_partition_page(image: MetadataImage, topics: Sequence[tuple[str, int]], limit: int,
                         cursor: tuple[str, int] | None, listener: str | None = None
                         ) -> dict[str, Any]:
    """The response's `topics` and `next_cursor` for `topics` ((name, error code) pairs; an
    error topic is answered with its code and counts no partitions), starting at `cursor`."""
    ordered = sorted(topics)
    if cursor is not None:
        ordered = [t for t in ordered if t[0] >= cursor[0]]
    out: list[dict[str, Any]] = []
    remaining = limit
    next_cursor = None
    for index, (name, code) in enumerate(ordered):
        if remaining <= 0:
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        topic = image.topic(name)
        if code != ErrorCode.NONE or topic is None:
            out.append(_error_topic(name, code or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            continue
        start = cursor[1] if cursor is not None and name == cursor[0] else 0
        pids = [pid for pid in sorted(topic.partitions) if pid >= start]
        page, rest = pids[:remaining], pids[remaining:]
        remaining -= len(page)
        out.append({"error_code": ErrorCode.NONE, "name": name, "topic_id": topic.topic_id,
                    "is_internal": name in INTERNAL_TOPICS,
                    "partitions": [_partition(image, pid, topic.partitions[pid], listener)
                                   for pid in page],
                    "topic_authorized_operations": _UNKNOWN_OPERATIONS})
        if rest:
            next_cursor = {"topic_name": name, "partition_index": rest[0]}
            break
    return {"throttle_time_ms": 0, "topics": out, "next_cursor": next_cursor}
