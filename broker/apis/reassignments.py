"""AlterPartitionReassignments and ListPartitionReassignments (KIP-455): the error answers.

Brokers forward both to the active controller (`broker.apis.admin.ForwardingHandlers`), which
decides in `metadata.controller.reassignments`. The request hook checks ALTER (alter) and
DESCRIBE (list) on the cluster first, as Kafka's KafkaApis does.
"""

from __future__ import annotations

from typing import Any, Mapping

from broker.apis.request import ErrorBody
from clients.protocol import ApiKey, ErrorCode


def _message(code: int, message: str | None) -> str:
    return message if message is not None else ErrorCode.from_code(code).message


def alter_partition_reassignments_error(body: Mapping[str, Any], version: int, code: int,
                                        message: str | None = None) -> dict[str, Any]:
    """The request-wide `code` at top level and on every partition named."""
    text = _message(code, message)
    return {"throttle_time_ms": 0, "error_code": code, "error_message": text, "responses": [
        {"name": topic["name"], "partitions": [
            {"partition_index": p["partition_index"], "error_code": code, "error_message": text}
            for p in topic.get("partitions") or ()]}
        for topic in body.get("topics") or ()]}


def list_partition_reassignments_error(body: Mapping[str, Any], version: int, code: int,
                                       message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": _message(code, message),
            "topics": []}


REASSIGNMENT_ERRORS: dict[int, ErrorBody] = {
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: alter_partition_reassignments_error,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: list_partition_reassignments_error,
}
