"""CreateTopics and DeleteTopics decisions."""

from __future__ import annotations

import logging
import random
import uuid
from collections import Counter
from typing import Any

from clients.protocol import ZERO_UUID, ErrorCode
from metadata.controller import Decision
from metadata.controller.assignments import (
    AssignmentError,
    check_manual_replicas,
    new_partition_record,
    new_topic_id,
    usable_brokers,
)
from metadata.controller.rejection import Rejected
from metadata.controller.request_limits import (
    MAX_RECORDS_PER_REQUEST,
    TOO_MANY_RECORDS,
    create_topics_refusal,
)
from metadata.image import MetadataImage
from metadata.placement import PlacementError, place_replicas
from metadata.records import (
    TOPIC_RESOURCE,
    ConfigRecord,
    MetadataRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from metadata.settings import ControllerSettings
from metadata.topic_names import collision_key, topic_name_error

logger = logging.getLogger(__name__)

# DescribeConfigs ConfigSource for a topic override.
_DYNAMIC_TOPIC_CONFIG = 1


def create_topics(
    image: MetadataImage,
    request: dict[str, Any],
    now_ms: int,
    *,
    rng: random.Random,
    settings: ControllerSettings,
) -> Decision:
    """CreateTopicsRequest -> records + CreateTopicsResponse (`validate_only` writes nothing).

    A request over Kafka's bounds (`request_limits`) is refused as a whole with
    POLICY_VIOLATION: the partition count before anything is built, the record count (which
    validate-only requests are held to as well) as soon as it is exceeded.
    """
    topics = request.get("topics") or []
    validate_only = bool(request.get("validate_only"))
    refusal = create_topics_refusal(topics, settings.num_partitions)
    if refusal is not None:
        return [], _refused(topics, refusal)
    name_counts = Counter(t["name"] for t in topics)
    collisions = {collision_key(n): n for n in image.topics_by_name}
    taken_ids = set(image.topics_by_id)
    records: list[MetadataRecord] = []
    results = []
    planned_records = 0
    for topic in topics:
        name = topic["name"]
        try:
            if name_counts[name] > 1:
                raise Rejected(ErrorCode.INVALID_REQUEST, f"Found multiple entries for topic {name}.")
            topic_records, result = _create_one(image, topic, collisions, taken_ids, rng, settings)
        except Rejected as rej:
            results.append(_error_result(name, rej.code, rej.message))
            continue
        planned_records += len(topic_records)
        if planned_records > MAX_RECORDS_PER_REQUEST:
            return [], _refused(topics, TOO_MANY_RECORDS)
        collisions[collision_key(name)] = name
        if validate_only:
            result["topic_id"] = ZERO_UUID
        else:
            taken_ids.add(result["topic_id"])
            records.extend(topic_records)
            logger.info("creating topic %s with %d partition(s)", name, result["num_partitions"])
        results.append(result)
    return records, {"throttle_time_ms": 0, "topics": results}


def _create_one(
    image: MetadataImage,
    topic: dict[str, Any],
    collisions: dict[str, str],
    taken_ids: set[uuid.UUID],
    rng: random.Random,
    settings: ControllerSettings,
) -> tuple[list[MetadataRecord], dict[str, Any]]:
    name = topic["name"]
    reason = topic_name_error(name)
    if reason is not None:
        raise Rejected(ErrorCode.INVALID_TOPIC_EXCEPTION, reason)
    if name in image.topics_by_name:
        raise Rejected(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    other = collisions.get(collision_key(name))
    if other is not None and other != name:
        raise Rejected(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic '{name}' collides with existing topic: {other}",
        )
    configs = _checked_configs(topic.get("configs") or [], settings)
    replica_lists = _replica_lists(image, topic, rng, settings)
    topic_id = new_topic_id(rng, taken_ids)
    records: list[MetadataRecord] = [TopicRecord(name=name, topic_id=topic_id)]
    records.extend(
        new_partition_record(image, topic_id, pid, replicas) for pid, replicas in enumerate(replica_lists)
    )
    records.extend(
        ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name=name, name=k, value=v)
        for k, v in configs.items()
    )
    result = {
        "name": name,
        "topic_id": topic_id,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "topic_config_error_code": ErrorCode.NONE,
        "num_partitions": len(replica_lists),
        "replication_factor": len(replica_lists[0]),
        "configs": [
            {
                "name": k,
                "value": v,
                "read_only": False,
                "config_source": _DYNAMIC_TOPIC_CONFIG,
                "is_sensitive": False,
            }
            for k, v in configs.items()
        ],
    }
    return records, result


def _checked_configs(raw: list[dict[str, Any]], settings: ControllerSettings) -> dict[str, str]:
    configs: dict[str, str] = {}
    for entry in raw:
        key, value = entry["name"], entry.get("value")
        if key in configs:
            raise Rejected(ErrorCode.INVALID_REQUEST, f"Duplicate configuration key {key}")
        if value is None:
            raise Rejected(ErrorCode.INVALID_CONFIG, f"Null value not supported for topic configs: {key}")
        try:
            settings.check_topic_config(key, value)
        except ValueError as exc:  # ConfigValidationError included
            raise Rejected(ErrorCode.INVALID_CONFIG, str(exc)) from None
        configs[key] = value
    return configs


def _replica_lists(
    image: MetadataImage, topic: dict[str, Any], rng: random.Random, settings: ControllerSettings
) -> list[tuple[int, ...]]:
    num_partitions = topic.get("num_partitions", -1)
    replication_factor = topic.get("replication_factor", -1)
    assignments = topic.get("assignments") or []
    if assignments:
        if num_partitions != -1 or replication_factor != -1:
            raise Rejected(
                ErrorCode.INVALID_REQUEST,
                "A manual partition assignment was given, so numPartitions and "
                "replicationFactor must be -1.",
            )
        return _manual_lists(image, assignments)
    if num_partitions == -1:
        num_partitions = settings.num_partitions
    if num_partitions <= 0:
        raise Rejected(
            ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."
        )
    if replication_factor == -1:
        replication_factor = settings.default_replication_factor
    if replication_factor <= 0:
        raise Rejected(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        )
    try:
        return place_replicas(usable_brokers(image), num_partitions, replication_factor, rng)
    except PlacementError as exc:
        raise Rejected(ErrorCode.INVALID_REPLICATION_FACTOR, str(exc)) from None


def _manual_lists(image: MetadataImage, assignments: list[dict[str, Any]]) -> list[tuple[int, ...]]:
    by_index: dict[int, tuple[int, ...]] = {}
    try:
        for a in assignments:
            index = a["partition_index"]
            if index in by_index:
                raise AssignmentError(f"Found multiple manual assignments for partition {index}.")
            by_index[index] = check_manual_replicas(image, index, a.get("broker_ids") or ())
        if sorted(by_index) != list(range(len(by_index))):
            raise AssignmentError("Partitions in the manual assignment must be numbered 0 to n-1.")
        sizes = {len(r) for r in by_index.values()}
        if len(sizes) > 1:
            raise AssignmentError(
                "All partitions in the manual partition assignment must have the same number of replicas."
            )
    except AssignmentError as exc:
        raise Rejected(ErrorCode.INVALID_REPLICA_ASSIGNMENT, str(exc)) from None
    return [by_index[i] for i in range(len(by_index))]


def _refused(topics: list[dict[str, Any]], message: str) -> dict[str, Any]:
    """The whole request refused: every topic gets POLICY_VIOLATION (Kafka's
    CreateTopicsRequest.getErrorResponse), and the refusal is logged once."""
    logger.warning("refusing CreateTopics of %d topic(s): %s", len(topics), message)
    return {"throttle_time_ms": 0,
            "topics": [_error_result(t["name"], ErrorCode.POLICY_VIOLATION, message) for t in topics]}


def _error_result(name: str, code: int, message: str) -> dict[str, Any]:
    return {
        "name": name,
        "topic_id": ZERO_UUID,
        "error_code": code,
        "error_message": message,
        "topic_config_error_code": ErrorCode.NONE,
        "num_partitions": -1,
        "replication_factor": -1,
        "configs": None,
    }


def delete_topics(
    image: MetadataImage,
    request: dict[str, Any],
    now_ms: int,
    *,
    settings: ControllerSettings,
) -> Decision:
    """DeleteTopicsRequest (by name, by id, or v0-5 `topic_names`) -> records + response."""
    wanted: list[tuple[str | None, uuid.UUID]] = [
        (t.get("name"), t.get("topic_id") or ZERO_UUID) for t in request.get("topics") or []
    ]
    wanted.extend((n, ZERO_UUID) for n in request.get("topic_names") or [])
    resolved: list[tuple[str | None, uuid.UUID, int, str | None]] = []
    for name, topic_id in wanted:
        if topic_id != ZERO_UUID:
            topic = image.topic_by_id(topic_id)
            if topic is None:
                resolved.append((name, topic_id, ErrorCode.UNKNOWN_TOPIC_ID, "Unknown topic id."))
                continue
            name = topic.name
        elif name is not None:
            topic = image.topic(name)
            if topic is None:
                message = "This server does not host this topic-partition."
                resolved.append((name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, message))
                continue
            topic_id = topic.topic_id
        else:
            resolved.append((None, ZERO_UUID, ErrorCode.INVALID_REQUEST, "Neither topic name nor id given."))
            continue
        if not settings.delete_topic_enable:
            message = "Topic deletion is disabled."
            resolved.append((name, topic_id, ErrorCode.TOPIC_DELETION_DISABLED, message))
            continue
        resolved.append((name, topic_id, ErrorCode.NONE, None))
    id_counts = Counter(tid for _, tid, code, _ in resolved if code == ErrorCode.NONE)
    records: list[MetadataRecord] = []
    responses = []
    for name, topic_id, code, message in resolved:
        if code == ErrorCode.NONE and id_counts[topic_id] > 1:
            code, message = ErrorCode.INVALID_REQUEST, "Duplicate topic in request."
        elif code == ErrorCode.NONE:
            records.append(RemoveTopicRecord(topic_id=topic_id))
            logger.info("deleting topic %s (%s)", name, topic_id)
        responses.append({"name": name, "topic_id": topic_id, "error_code": code, "error_message": message})
    return records, {"throttle_time_ms": 0, "responses": responses}
