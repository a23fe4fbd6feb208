"""What a broker checks before forwarding an admin request to the active controller
(Kafka's KafkaApis checks for CreateTopics, DeleteTopics, CreatePartitions and
IncrementalAlterConfigs): the entries the principal may not touch are answered here with
TOPIC_/CLUSTER_AUTHORIZATION_FAILED, the rest go on to the controller."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from broker.apis.authorization import AclOperation, Authorization, ResourceType
from broker.apis.request import RequestContext
from clients.protocol import ZERO_UUID, ApiKey, ErrorCode
from metadata.image import MetadataImage

TOPIC_CONFIG_RESOURCE = 2
BROKER_CONFIG_RESOURCE = 4
BROKER_LOGGER_CONFIG_RESOURCE = 8


@dataclass
class Split:
    """The request to forward (None: nothing left to ask) and the refused entries'
    results, to add under `results_key` of the controller's answer."""

    body: dict[str, Any] | None
    results_key: str
    refused: list[dict[str, Any]] = field(default_factory=list)


def _refused_topic(api_key: int, name: str | None, topic_id: Any, code: int) -> dict[str, Any]:
    message = ErrorCode.from_code(code).message
    if api_key == ApiKey.CREATE_TOPICS:
        return {"name": name, "topic_id": ZERO_UUID, "error_code": code,
                "error_message": message, "num_partitions": -1, "replication_factor": -1,
                "configs": None}
    if api_key == ApiKey.DELETE_TOPICS:
        return {"name": name, "topic_id": topic_id, "error_code": code, "error_message": message}
    return {"name": name, "error_code": code, "error_message": message}


def split_for_forwarding(api_key: int, body: dict[str, Any], ctx: RequestContext,
                         authz: Authorization, image: Callable[[], MetadataImage]) -> Split:
    """Split `body` (DeleteTopics already in its v6 `topics` form) by authorization."""
    if api_key == ApiKey.CREATE_TOPICS:
        topics = body.get("topics") or []
        if authz.cluster(ctx, AclOperation.CREATE):
            return Split(body, "topics")
        allowed = authz.allowed_names(ctx, AclOperation.CREATE, ResourceType.TOPIC,
                                      (t["name"] for t in topics))
        return _split_topics(api_key, body, "topics", "topics", allowed)
    if api_key == ApiKey.CREATE_PARTITIONS:
        allowed = authz.allowed_names(ctx, AclOperation.ALTER, ResourceType.TOPIC,
                                      (t["name"] for t in body.get("topics") or ()))
        return _split_topics(api_key, body, "topics", "results", allowed)
    if api_key == ApiKey.DELETE_TOPICS:
        return _split_delete_topics(body, ctx, authz, image())
    if api_key in (ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.ALTER_CONFIGS):
        return _split_configs(body, ctx, authz)
    return Split(body, "")


def _split_topics(api_key: int, body: dict[str, Any], key: str, results_key: str,
                  allowed: set[str]) -> Split:
    entries = body.get(key) or []
    kept = [t for t in entries if t["name"] in allowed]
    refused = [_refused_topic(api_key, t["name"], ZERO_UUID, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
               for t in entries if t["name"] not in allowed]
    return Split({**body, key: kept} if kept or not refused else None, results_key, refused)


def _split_delete_topics(body: dict[str, Any], ctx: RequestContext, authz: Authorization,
                         image: MetadataImage) -> Split:
    kept, refused = [], []
    for target in body.get("topics") or ():
        name, topic_id = target.get("name"), target.get("topic_id") or ZERO_UUID
        if name is None and topic_id != ZERO_UUID:
            topic = image.topic_by_id(topic_id)
            if topic is None:
                kept.append(target)  # the controller answers UNKNOWN_TOPIC_ID
                continue
            if not authz.allowed(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name):
                # Kafka does not reveal the name behind an id the principal may not describe.
                refused.append(_refused_topic(ApiKey.DELETE_TOPICS, None, topic_id,
                                              ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            name = topic.name
        if name is not None and not authz.allowed(ctx, AclOperation.DELETE,
                                                  ResourceType.TOPIC, name):
            refused.append(_refused_topic(ApiKey.DELETE_TOPICS, name, topic_id,
                                          ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        kept.append(target)
    return Split({**body, "topics": kept} if kept or not refused else None, "responses", refused)


def _split_configs(body: dict[str, Any], ctx: RequestContext, authz: Authorization) -> Split:
    kept, refused = [], []
    for resource in body.get("resources") or ():
        rtype, name = int(resource["resource_type"]), resource["resource_name"]
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
            refused.append({"error_code": code, "error_message": ErrorCode.from_code(code).message,
                            "resource_type": rtype, "resource_name": name})
    return Split({**body, "resources": kept} if kept or not refused else None, "responses",
                 refused)
