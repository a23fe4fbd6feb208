"""CreatePartitions decision: grow a topic's partition count (never shrink it)."""

from __future__ import annotations

import logging
import random
from collections import Counter
from typing import Any

from clients.protocol import ErrorCode
from metadata.controller import Decision
from metadata.controller.assignments import (
    AssignmentError,
    check_manual_replicas,
    new_partition_record,
    usable_brokers,
)
from metadata.controller.request_limits import create_partitions_refusal
from metadata.image import MetadataImage, TopicImage
from metadata.placement import PlacementError, place_replicas
from metadata.records import MetadataRecord

logger = logging.getLogger(__name__)


def create_partitions(
    image: MetadataImage,
    request: dict[str, Any],
    now_ms: int,
    *,
    rng: random.Random,
) -> Decision:
    """CreatePartitionsRequest -> records + CreatePartitionsResponse. A request adding more
    partitions than Kafka's bound (`request_limits`) is refused as a whole with
    POLICY_VIOLATION before any assignment is built."""
    topics = request.get("topics") or []
    validate_only = bool(request.get("validate_only"))
    refusal = create_partitions_refusal(image, topics)
    if refusal is not None:
        logger.warning("refusing CreatePartitions of %d topic(s): %s", len(topics), refusal)
        return [], {"throttle_time_ms": 0, "results": [
            {"name": t["name"], "error_code": ErrorCode.POLICY_VIOLATION, "error_message": refusal}
            for t in topics]}
    name_counts = Counter(t["name"] for t in topics)
    records: list[MetadataRecord] = []
    results = []
    for entry in topics:
        name = entry["name"]
        if name_counts[name] > 1:
            code, message, new = ErrorCode.INVALID_REQUEST, "Duplicate topic name.", []
        else:
            code, message, new = _grow(image, entry, rng)
        if code == ErrorCode.NONE and not validate_only:
            records.extend(new)
            logger.info("topic %s grows to %d partition(s)", name, entry["count"])
        results.append({"name": name, "error_code": code, "error_message": message})
    return records, {"throttle_time_ms": 0, "results": results}


def _grow(
    image: MetadataImage, entry: dict[str, Any], rng: random.Random
) -> tuple[int, str | None, list[MetadataRecord]]:
    topic = image.topic(entry["name"])
    if topic is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.", []
    current = topic.partition_count()
    count = entry["count"]
    if count < current:
        message = f"Topic currently has {current} partitions, which is higher than the requested {count}."
        return ErrorCode.INVALID_PARTITIONS, message, []
    if count == current:
        return ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).", []
    additional = count - current
    assignments = entry.get("assignments")
    if assignments is not None:
        try:
            replica_lists = _manual(image, topic, assignments, additional)
        except AssignmentError as exc:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, str(exc), []
    else:
        replication_factor = len(topic.partitions[0].replicas) if topic.partitions else 1
        try:
            replica_lists = place_replicas(
                usable_brokers(image), additional, replication_factor, rng, first_partition=current
            )
        except PlacementError as exc:
            return ErrorCode.INVALID_REPLICATION_FACTOR, str(exc), []
    records: list[MetadataRecord] = [
        new_partition_record(image, topic.topic_id, current + i, replicas)
        for i, replicas in enumerate(replica_lists)
    ]
    return ErrorCode.NONE, None, records


def _manual(
    image: MetadataImage, topic: TopicImage, assignments: list[dict[str, Any]], additional: int
) -> list[tuple[int, ...]]:
    if len(assignments) != additional:
        raise AssignmentError(
            f"Attempted to add {additional} additional partition(s), but only "
            f"{len(assignments)} assignment(s) were specified."
        )
    existing_rf = len(topic.partitions[0].replicas) if topic.partitions else None
    current = topic.partition_count()
    lists = []
    for i, a in enumerate(assignments):
        replicas = check_manual_replicas(image, current + i, a.get("broker_ids") or ())
        if existing_rf is not None and len(replicas) != existing_rf:
            raise AssignmentError(
                f"The manual partition assignment includes a partition with {len(replicas)} "
                f"replica(s), but this is not consistent with previous partitions, which have "
                f"{existing_rf} replica(s)."
            )
        lists.append(replicas)
    return lists
