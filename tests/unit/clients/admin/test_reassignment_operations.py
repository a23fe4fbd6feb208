"""The reassignment admin operations: the requests they build and how they read answers."""

from __future__ import annotations

from typing import Any

from clients.admin.operations import Operation
from clients.admin.reassignment_operations import (
    OngoingReassignment,
    ReassignmentResult,
    alter_partition_reassignments,
    list_partition_reassignments,
)
from clients.protocol import ApiKey, ErrorCode, KafkaError


def _drive(operation: Operation, response: dict[str, Any]) -> tuple[Any, Any]:
    """The one call `operation` makes and its result given `response`."""
    call = next(operation)
    try:
        operation.send(response)
    except StopIteration as stop:
        return call, stop.value
    raise AssertionError("the operation made a second call")


def test_alter_sends_targets_and_cancellations_per_topic() -> None:
    op = alter_partition_reassignments({("t", 0): [2, 3, 4], ("t", 1): None, ("u", 0): [1]},
                                       timeout_ms=5000)
    response = {"error_code": 0, "error_message": None, "responses": [
        {"name": "t", "partitions": [
            {"partition_index": 0, "error_code": 0, "error_message": None},
            {"partition_index": 1, "error_code": ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
             "error_message": "none"}]},
        {"name": "u", "partitions": [
            {"partition_index": 0, "error_code": 0, "error_message": None}]}]}
    call, results = _drive(op, response)
    assert call.api_key == ApiKey.ALTER_PARTITION_REASSIGNMENTS
    body = call.build(0)
    assert body["timeout_ms"] == 5000
    assert body["topics"] == [
        {"name": "t", "partitions": [{"partition_index": 0, "replicas": [2, 3, 4]},
                                     {"partition_index": 1, "replicas": None}]},
        {"name": "u", "partitions": [{"partition_index": 0, "replicas": [1]}]}]
    assert results == [ReassignmentResult("t", 0, 0, None),
                       ReassignmentResult("t", 1, 85, "none"),
                       ReassignmentResult("u", 0, 0, None)]


def test_alter_spreads_a_request_level_error_over_every_partition() -> None:
    op = alter_partition_reassignments({("t", 0): [1], ("t", 1): [2]})
    _, results = _drive(op, {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                             "error_message": None, "responses": []})
    assert [(r.partition, r.error_code) for r in results] == [(0, 31), (1, 31)]


def test_alter_of_nothing_sends_nothing() -> None:
    op = alter_partition_reassignments({})
    try:
        next(op)
    except StopIteration as stop:
        assert stop.value == []
    else:
        raise AssertionError("a request was made for no partitions")


def test_list_names_partitions_or_asks_for_all() -> None:
    answer = {"error_code": 0, "error_message": None, "topics": [
        {"name": "t", "partitions": [{"partition_index": 1, "replicas": [1, 2, 3, 4],
                                      "adding_replicas": [4], "removing_replicas": [1]}]}]}
    call, ongoing = _drive(list_partition_reassignments([("t", 1), ("t", 2)]), answer)
    assert call.build(0)["topics"] == [{"name": "t", "partition_indexes": [1, 2]}]
    assert ongoing == [OngoingReassignment("t", 1, (1, 2, 3, 4), (4,), (1,))]
    call, _ = _drive(list_partition_reassignments(), answer)
    assert call.build(0)["topics"] is None


def test_list_raises_a_request_level_error() -> None:
    op = list_partition_reassignments()
    next(op)
    try:
        op.send({"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": None,
                 "topics": []})
    except KafkaError as error:
        assert error.code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    else:
        raise AssertionError("no error raised")
