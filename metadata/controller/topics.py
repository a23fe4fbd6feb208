"""CreateTopics and DeleteTopics decisions, and their responses' one definition (the broker's
error answers use it too)."""

from __future__ import annotations

import logging
import random
import uuid
from collections import Counter
from clients.protocol import ZERO_UUID, ErrorCode
from clients.protocol.messages.create_topics import (
    CreateTopicsRequestData,
    CreateTopicsResponseData,
)
from clients.protocol.messages.delete_topics import (
    DeleteTopicsRequestData,
    DeleteTopicsResponseData,
)
from metadata.controller.assignments import (
    AssignmentError,
    check_manual_replicas,
    new_partition_record,
    new_topic_id,
    usable_brokers,
)
from metadata.controller.rejection import Rejected, error_text
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

CreatableTopic = CreateTopicsRequestData.CreatableTopic
CreatableTopicResult = CreateTopicsResponseData.CreatableTopicResult
DeleteTopicState = DeleteTopicsRequestData.DeleteTopicState
DeletableTopicResult = DeleteTopicsResponseData.DeletableTopicResult

# DescribeConfigs ConfigSource for a topic override.
_DYNAMIC_TOPIC_CONFIG = 1


def create_topics(
    image: MetadataImage,
    request: CreateTopicsRequestData,
    now_ms: int,
    *,
    rng: random.Random,
    settings: ControllerSettings,
) -> tuple[list[MetadataRecord], CreateTopicsResponseData]:
    """CreateTopicsRequest -> records + CreateTopicsResponse (`validate_only` writes nothing).

    A request over Kafka's bounds (`request_limits`) is refused as a whole with
    POLICY_VIOLATION: the partition count before anything is built, the record count (which
    validate-only requests are held to as well) as soon as it is exceeded.
    """
    topics = request.topics
    validate_only = request.validate_only
    refusal = create_topics_refusal(topics, settings.num_partitions)
    if refusal is not None:
        return [], _refused(topics, refusal)
    name_counts = Counter(t.name for t in topics)
    collisions = {collision_key(n): n for n in image.topics_by_name}
    taken_ids = set(image.topics_by_id)
    records: list[MetadataRecord] = []
    results: list[CreatableTopicResult] = []
    planned_records = 0
    for topic in topics:
        name = topic.name
        try:
            if name_counts[name] > 1:
                raise Rejected(ErrorCode.INVALID_REQUEST, f"Found multiple entries for topic {name}.")
            topic_records, result = _create_one(image, topic, collisions, taken_ids, rng, settings)
        except Rejected as rej:
            results.append(topic_error_result(name, rej.code, rej.message))
            continue
        planned_records += len(topic_records)
        if planned_records > MAX_RECORDS_PER_REQUEST:
            return [], _refused(topics, TOO_MANY_RECORDS)
        collisions[collision_key(name)] = name
        if validate_only:
            result.topic_id = ZERO_UUID
        else:
            taken_ids.add(result.topic_id)
            records.extend(topic_records)
            logger.info("creating topic %s with %d partition(s)", name, result.num_partitions)
        results.append(result)
    return records, CreateTopicsResponseData(topics=results)


def _create_one(
    image: MetadataImage,
    topic: CreatableTopic,
    collisions: dict[str, str],
    taken_ids: set[uuid.UUID],
    rng: random.Random,
    settings: ControllerSettings,
) -> tuple[list[MetadataRecord], CreatableTopicResult]:
    name = topic.name
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
    configs = _checked_configs(topic.configs, settings)
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
    result = CreatableTopicResult(
        name=name,
        topic_id=topic_id,
        error_code=ErrorCode.NONE,
        error_message=None,
        num_partitions=len(replica_lists),
        replication_factor=len(replica_lists[0]),
        configs=[
            CreateTopicsResponseData.CreatableTopicConfigs(
                name=k, value=v, read_only=False, config_source=_DYNAMIC_TOPIC_CONFIG,
                is_sensitive=False)
            for k, v in configs.items()
        ],
    )
    return records, result


def _checked_configs(raw: list[CreateTopicsRequestData.CreatableTopicConfig],
                     settings: ControllerSettings) -> dict[str, str]:
    configs: dict[str, str] = {}
    for entry in raw:
        key, value = entry.name, entry.value
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
    image: MetadataImage, topic: CreatableTopic, rng: random.Random, settings: ControllerSettings
) -> list[tuple[int, ...]]:
    num_partitions = topic.num_partitions
    replication_factor = topic.replication_factor
    assignments = topic.assignments
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


def _manual_lists(image: MetadataImage,
                  assignments: list[CreateTopicsRequestData.CreatableReplicaAssignment]
                  ) -> list[tuple[int, ...]]:
    by_index: dict[int, tuple[int, ...]] = {}
    try:
        for a in assignments:
            index = a.partition_index
            if index in by_index:
                raise AssignmentError(f"Found multiple manual assignments for partition {index}.")
            by_index[index] = check_manual_replicas(image, index, a.broker_ids)
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


def _refused(topics: list[CreatableTopic], message: str) -> CreateTopicsResponseData:
    """The whole request refused: every topic gets POLICY_VIOLATION (Kafka's
    CreateTopicsRequest.getErrorResponse), and the refusal is logged once."""
    logger.warning("refusing CreateTopics of %d topic(s): %s", len(topics), message)
    return CreateTopicsResponseData(
        topics=[topic_error_result(t.name, ErrorCode.POLICY_VIOLATION, message) for t in topics])


def topic_error_result(name: str, code: int, message: str | None = None) -> CreatableTopicResult:
    """One topic's CreateTopics result carrying `code` (and Kafka's message of it by default)."""
    return CreatableTopicResult(name=name, topic_id=ZERO_UUID, error_code=code,
                                error_message=error_text(code, message), num_partitions=-1,
                                replication_factor=-1, configs=None)


def create_topics_error(body: CreateTopicsRequestData, version: int, code: int,
                        message: str | None = None) -> CreateTopicsResponseData:
    """Every topic of the request with `code` (CreateTopics has no top-level error)."""
    return CreateTopicsResponseData(
        topics=[topic_error_result(topic.name, code, message) for topic in body.topics])


def delete_targets(body: DeleteTopicsRequestData) -> list[DeleteTopicState]:
    """The topics a DeleteTopics request names, by name (v0-5 `topic_names`) or by name or
    id (v6+ `topics`), in the v6 form."""
    targets = [DeleteTopicState(name=t.name, topic_id=t.topic_id) for t in body.topics]
    targets.extend(DeleteTopicState(name=name) for name in body.topic_names)
    return targets


def deleted_topic_result(name: str | None, topic_id: uuid.UUID, code: int,
                         message: str | None) -> DeletableTopicResult:
    """One topic's DeleteTopics result."""
    return DeletableTopicResult(name=name, topic_id=topic_id, error_code=code,
                                error_message=message)


def delete_topics_error(body: DeleteTopicsRequestData, version: int, code: int,
                        message: str | None = None) -> DeleteTopicsResponseData:
    """Every topic of the request with `code` (DeleteTopics has no top-level error)."""
    text = error_text(code, message)
    return DeleteTopicsResponseData(responses=[
        deleted_topic_result(t.name, t.topic_id, code, text) for t in delete_targets(body)])


def delete_topics(
    image: MetadataImage,
    request: DeleteTopicsRequestData,
    now_ms: int,
    *,
    settings: ControllerSettings,
) -> tuple[list[MetadataRecord], DeleteTopicsResponseData]:
    """DeleteTopicsRequest (by name, by id, or v0-5 `topic_names`) -> records + response."""
    wanted = [(t.name, t.topic_id) for t in delete_targets(request)]
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
    responses: list[DeletableTopicResult] = []
    for name, topic_id, code, message in resolved:
        if code == ErrorCode.NONE and id_counts[topic_id] > 1:
            code, message = ErrorCode.INVALID_REQUEST, "Duplicate topic in request."
        elif code == ErrorCode.NONE:
            records.append(RemoveTopicRecord(topic_id=topic_id))
            logger.info("deleting topic %s (%s)", name, topic_id)
        responses.append(deleted_topic_result(name, topic_id, code, message))
    return records, DeleteTopicsResponseData(responses=responses)
