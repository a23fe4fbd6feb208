"""CreatePartitions decision: grow a topic's partition count (never shrink it); the
response's one definition (the broker's error answer uses it too)."""

from __future__ import annotations

import logging
import random
from collections import Counter
from clients.protocol import ErrorCode
from clients.protocol.messages.create_partitions import (
    CreatePartitionsRequestData,
    CreatePartitionsResponseData,
)
from metadata.controller.assignments import (
    AssignmentError,
    check_manual_replicas,
    new_partition_record,
    usable_brokers,
)
from metadata.controller.rejection import error_text
from metadata.controller.request_limits import create_partitions_refusal
from metadata.image import MetadataImage, TopicImage
from metadata.placement import PlacementError, place_replicas
from metadata.records import MetadataRecord

logger = logging.getLogger(__name__)

CreatePartitionsTopic = CreatePartitionsRequestData.CreatePartitionsTopic
CreatePartitionsTopicResult = CreatePartitionsResponseData.CreatePartitionsTopicResult


def partitions_result(name: str, code: int, message: str | None) -> CreatePartitionsTopicResult:
    """One topic's CreatePartitions result."""
    return CreatePartitionsTopicResult(name=name, error_code=code, error_message=message)


def create_partitions_error(body: CreatePartitionsRequestData, version: int, code: int,
                            message: str | None = None) -> CreatePartitionsResponseData:
    """Every topic of the request with `code` (CreatePartitions has no top-level error)."""
    text = error_text(code, message)
    return CreatePartitionsResponseData(
        results=[partitions_result(topic.name, code, text) for topic in body.topics])


def create_partitions(
    image: MetadataImage,
    request: CreatePartitionsRequestData,
    now_ms: int,
    *,
    rng: random.Random,
) -> tuple[list[MetadataRecord], CreatePartitionsResponseData]:
    """CreatePartitionsRequest -> records + CreatePartitionsResponse. A request adding more
    partitions than Kafka's bound (`request_limits`) is refused as a whole with
    POLICY_VIOLATION before any assignment is built."""
    topics = request.topics
    refusal = create_partitions_refusal(image, topics)
    if refusal is not None:
        logger.warning("refusing CreatePartitions of %d topic(s): %s", len(topics), refusal)
        return [], create_partitions_error(request, 0, ErrorCode.POLICY_VIOLATION, refusal)
    name_counts = Counter(t.name for t in topics)
    records: list[MetadataRecord] = []
    results: list[CreatePartitionsTopicResult] = []
    for entry in topics:
        name = entry.name
        if name_counts[name] > 1:
            code, message, new = ErrorCode.INVALID_REQUEST, "Duplicate topic name.", []
        else:
            code, message, new = _grow(image, entry, rng)
        if code == ErrorCode.NONE and not request.validate_only:
            records.extend(new)
            logger.info("topic %s grows to %d partition(s)", name, entry.count)
        results.append(partitions_result(name, code, message))
    return records, CreatePartitionsResponseData(results=results)


def _grow(
    image: MetadataImage, entry: CreatePartitionsTopic, rng: random.Random
) -> tuple[int, str | None, list[MetadataRecord]]:
    topic = image.topic(entry.name)
    if topic is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.", []
    current = topic.partition_count()
    count = entry.count
    if count < current:
        message = f"Topic currently has {current} partitions, which is higher than the requested {count}."
        return ErrorCode.INVALID_PARTITIONS, message, []
    if count == current:
        return ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).", []
    additional = count - current
    assignments = entry.assignments
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
    image: MetadataImage, topic: TopicImage,
    assignments: list[CreatePartitionsRequestData.CreatePartitionsAssignment], additional: int
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
        replicas = check_manual_replicas(image, current + i, a.broker_ids)
        if existing_rf is not None and len(replicas) != existing_rf:
            raise AssignmentError(
                f"The manual partition assignment includes a partition with {len(replicas)} "
                f"replica(s), but this is not consistent with previous partitions, which have "
                f"{existing_rf} replica(s)."
            )
        lists.append(replicas)
    return lists
