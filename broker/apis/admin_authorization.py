"""What a broker checks before forwarding an admin request to the active controller
(Kafka's KafkaApis checks for CreateTopics, DeleteTopics, CreatePartitions,
IncrementalAlterConfigs and AlterConfigs): the entries the principal may not touch are
answered here with TOPIC_/CLUSTER_AUTHORIZATION_FAILED, the rest go on to the controller."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from broker.apis.authorization import AclOperation, Authorization, ResourceType
from broker.apis.request import RequestContext
from clients.protocol import ZERO_UUID, ApiKey, ErrorCode
from clients.protocol.message import Message
from clients.protocol.messages.alter_configs import AlterConfigsRequestData
from clients.protocol.messages.create_partitions import CreatePartitionsRequestData
from clients.protocol.messages.create_topics import CreateTopicsRequestData
from clients.protocol.messages.delete_topics import DeleteTopicsRequestData
from clients.protocol.messages.incremental_alter_configs import (
    IncrementalAlterConfigsRequestData,
)
from metadata.controller.configs import incremental_result, legacy_result
from metadata.controller.partitions import partitions_result
from metadata.controller.topics import deleted_topic_result, topic_error_result
from metadata.image import MetadataImage

TOPIC_CONFIG_RESOURCE = 2
BROKER_CONFIG_RESOURCE = 4
BROKER_LOGGER_CONFIG_RESOURCE = 8


@dataclass
class Split:
    """The request to forward (None: nothing left to ask) and the refused entries'
    results, to add under `results_key` of the controller's answer."""

    body: Any
    results_key: str
    refused: list[Message] = field(default_factory=list)


def _with(body: Message, **changes: Any) -> Any:
    """A copy of the request message `body` with `changes` made."""
    return type(body)(**{**dict(body.fields()), **changes})


def split_for_forwarding(api_key: int, body: Any, ctx: RequestContext,
                         authz: Authorization, image: Callable[[], MetadataImage]) -> Split:
    """Split `body` (DeleteTopics already in its v6 `topics` form) by authorization."""
    if api_key == ApiKey.CREATE_TOPICS:
        if authz.cluster(ctx, AclOperation.CREATE):
            return Split(body, "topics")
        return _split_create_topics(body, ctx, authz)
    if api_key == ApiKey.CREATE_PARTITIONS:
        return _split_create_partitions(body, ctx, authz)
    if api_key == ApiKey.DELETE_TOPICS:
        return _split_delete_topics(body, ctx, authz, image())
    if api_key in (ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.ALTER_CONFIGS):
        return _split_configs(api_key, body, ctx, authz)
    return Split(body, "")


def _refused_message() -> str:
    return ErrorCode.from_code(ErrorCode.TOPIC_AUTHORIZATION_FAILED).message


def _split_create_topics(body: CreateTopicsRequestData, ctx: RequestContext,
                         authz: Authorization) -> Split:
    allowed = authz.allowed_names(ctx, AclOperation.CREATE, ResourceType.TOPIC,
                                  (t.name for t in body.topics))
    kept = [t for t in body.topics if t.name in allowed]
    refused: list[Message] = [
        topic_error_result(t.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        for t in body.topics if t.name not in allowed]
    return Split(_with(body, topics=kept) if kept or not refused else None, "topics", refused)


def _split_create_partitions(body: CreatePartitionsRequestData, ctx: RequestContext,
                             authz: Authorization) -> Split:
    allowed = authz.allowed_names(ctx, AclOperation.ALTER, ResourceType.TOPIC,
                                  (t.name for t in body.topics))
    kept = [t for t in body.topics if t.name in allowed]
    refused: list[Message] = [
        partitions_result(t.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, _refused_message())
        for t in body.topics if t.name not in allowed]
    return Split(_with(body, topics=kept) if kept or not refused else None, "results", refused)


def _split_delete_topics(body: DeleteTopicsRequestData, ctx: RequestContext,
                         authz: Authorization, image: MetadataImage) -> Split:
    kept, refused = [], []
    code, message = ErrorCode.TOPIC_AUTHORIZATION_FAILED, _refused_message()
    for target in body.topics:
        name, topic_id = target.name, target.topic_id
        if name is None and topic_id != ZERO_UUID:
            topic = image.topic_by_id(topic_id)
            if topic is None:
                kept.append(target)  # the controller answers UNKNOWN_TOPIC_ID
                continue
            if not authz.allowed(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name):
                # Kafka does not reveal the name behind an id the principal may not describe.
                refused.append(deleted_topic_result(None, topic_id, code, message))
                continue
            name = topic.name
        if name is not None and not authz.allowed(ctx, AclOperation.DELETE,
                                                  ResourceType.TOPIC, name):
            refused.append(deleted_topic_result(name, topic_id, code, message))
            continue
        kept.append(target)
    return Split(_with(body, topics=kept) if kept or not refused else None, "responses",
                 refused)


def _split_configs(api_key: int,
                   body: IncrementalAlterConfigsRequestData | AlterConfigsRequestData,
                   ctx: RequestContext, authz: Authorization) -> Split:
    result = incremental_result if api_key == ApiKey.INCREMENTAL_ALTER_CONFIGS else legacy_result
    kept, refused = [], []
    for resource in body.resources:
        rtype, name = resource.resource_type, resource.resource_name
        if rtype == TOPIC_CONFIG_RESOURCE:
            ok = authz.allowed(ctx, AclOperation.ALTER_CONFIGS, ResourceType.TOPIC, name)
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif rtype in (BROKER_CONFIG_RESOURCE, BROKER_LOGGER_CONFIG_RESOURCE):
            ok = authz.cluster(ctx, AclOperation.ALTER_CONFIGS)
            code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        else:
            ok, code = True, ErrorCode.NONE
        if ok:
            kept.append(resource)
        else:
            refused.append(result(rtype, name, code, ErrorCode.from_code(code).message))
    return Split(_with(body, resources=kept) if kept or not refused else None, "responses",
                 refused)
