"""Many groups' committed offsets in few requests: one FindCoordinator for all the groups,
one OffsetFetch per coordinator (and one group per request from older brokers)."""

from __future__ import annotations

from typing import Any, Callable

from clients.admin.group_batch_operations import list_groups_offsets
from clients.admin.operations import Call, Operation
from clients.protocol import ApiKey, ErrorCode, KafkaError


def _run(operation: Operation, answer: Callable[[Call], dict[str, Any]]
         ) -> tuple[list[Call], Any]:
    calls: list[Call] = []
    try:
        call = next(operation)
        while True:
            calls.append(call)
            call = operation.send(answer(call))
    except StopIteration as stop:
        return calls, stop.value


def _partition(offset: int) -> dict[str, Any]:
    return {"partition_index": 0, "committed_offset": offset, "error_code": 0}


def test_one_find_coordinator_and_one_offset_fetch_per_coordinator() -> None:
    def answer(call: Call) -> dict[str, Any]:
        body = call.build(8 if call.api_key == ApiKey.OFFSET_FETCH else 4)
        if call.api_key == ApiKey.FIND_COORDINATOR:
            return {"coordinators": [
                {"key": g, "node_id": 1 if g != "g3" else 2, "error_code": 0}
                if g != "lost" else
                {"key": g, "node_id": -1, "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE,
                 "error_message": None} for g in body["coordinator_keys"]]}
        return {"groups": [{"group_id": g["group_id"], "error_code": 0, "topics": [
            {"name": "t", "partitions": [_partition(int(g["group_id"][1:]))]}]}
            for g in body["groups"]]}

    calls, offsets = _run(list_groups_offsets(["g1", "g2", "g3", "lost"]), answer)
    assert [c.api_key for c in calls] == [ApiKey.FIND_COORDINATOR, ApiKey.OFFSET_FETCH,
                                          ApiKey.OFFSET_FETCH]
    assert [c.node_id for c in calls[1:]] == [1, 2]
    assert {g: o for g, o in offsets.items() if g != "lost"} == {
        "g1": {("t", 0): 1}, "g2": {("t", 0): 2}, "g3": {("t", 0): 3}}
    assert isinstance(offsets["lost"], KafkaError)
    assert offsets["lost"].code == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_older_brokers_are_asked_one_group_at_a_time() -> None:
    def answer(call: Call) -> dict[str, Any]:
        body = call.build(3 if call.api_key == ApiKey.FIND_COORDINATOR else 7)
        if call.api_key == ApiKey.FIND_COORDINATOR:
            return {"node_id": 1, "error_code": 0, "error_message": None}
        code = ErrorCode.GROUP_AUTHORIZATION_FAILED if body["group_id"] == "g2" else 0
        return {"error_code": code, "topics": [] if code else [
            {"name": "t", "partitions": [_partition(5)]}]}

    calls, offsets = _run(list_groups_offsets(["g1", "g2"]), answer)
    assert [c.api_key for c in calls].count(ApiKey.OFFSET_FETCH) == 2
    assert offsets["g1"] == {("t", 0): 5}
    assert offsets["g2"].code == ErrorCode.GROUP_AUTHORIZATION_FAILED
