"""Error answers of the controller RPCs, shaped as Kafka shapes them for each API.

Kafka puts a controller-wide error (NOT_CONTROLLER, REQUEST_TIMED_OUT, ...) at the top level
of most responses, but per entry where the response has no top-level error code: per topic
for CreateTopics, DeleteTopics and CreatePartitions, per resource for IncrementalAlterConfigs.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from clients.protocol import ApiKey, ErrorCode, ZERO_UUID

ErrorResponse = Callable[[Mapping[str, Any], int, str | None], dict[str, Any]]


def _message(code: int, message: str | None) -> str:
    return message if message is not None else ErrorCode.from_code(code).message


def create_topics_error(body: Mapping[str, Any], code: int, message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "topics": [
        {"name": topic["name"], "topic_id": ZERO_UUID, "error_code": code,
         "error_message": _message(code, message), "num_partitions": -1,
         "replication_factor": -1, "configs": None}
        for topic in body.get("topics") or ()]}


def delete_topics_error(body: Mapping[str, Any], code: int, message: str | None) -> dict[str, Any]:
    entries = [(t.get("name"), t.get("topic_id") or ZERO_UUID) for t in body.get("topics") or ()]
    entries.extend((name, ZERO_UUID) for name in body.get("topic_names") or ())
    return {"throttle_time_ms": 0, "responses": [
        {"name": name, "topic_id": topic_id, "error_code": code,
         "error_message": _message(code, message)}
        for name, topic_id in entries]}


def create_partitions_error(body: Mapping[str, Any], code: int, message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "results": [
        {"name": topic["name"], "error_code": code, "error_message": _message(code, message)}
        for topic in body.get("topics") or ()]}


def incremental_alter_configs_error(body: Mapping[str, Any], code: int,
                                    message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "responses": [
        {"error_code": code, "error_message": _message(code, message),
         "resource_type": res["resource_type"], "resource_name": res["resource_name"]}
        for res in body.get("resources") or ()]}


def alter_partition_error(body: Mapping[str, Any], code: int, message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "topics": []}


def broker_registration_error(body: Mapping[str, Any], code: int,
                              message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "broker_epoch": -1}


def broker_heartbeat_error(body: Mapping[str, Any], code: int, message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "is_caught_up": False, "is_fenced": True,
            "should_shut_down": False}


def allocate_producer_ids_error(body: Mapping[str, Any], code: int,
                                message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "producer_id_start": -1, "producer_id_len": 0}


ERROR_RESPONSES: dict[int, ErrorResponse] = {
    ApiKey.CREATE_TOPICS: create_topics_error,
    ApiKey.DELETE_TOPICS: delete_topics_error,
    ApiKey.CREATE_PARTITIONS: create_partitions_error,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: incremental_alter_configs_error,
    ApiKey.ALTER_PARTITION: alter_partition_error,
    ApiKey.BROKER_REGISTRATION: broker_registration_error,
    ApiKey.BROKER_HEARTBEAT: broker_heartbeat_error,
    ApiKey.ALLOCATE_PRODUCER_IDS: allocate_producer_ids_error,
}


def error_response(api_key: int, body: Mapping[str, Any] | None, code: int,
                   message: str | None = None) -> dict[str, Any]:
    """The response of `api_key` carrying `code` everywhere Kafka would put it."""
    builder = ERROR_RESPONSES.get(int(api_key))
    if builder is None:
        return {"error_code": code}
    return builder(body or {}, code, message)
