"""ListOffsets and DeleteRecords in the admin client: one request per partition leader,
errors per partition, a moved leader looked up again (operations driven without I/O)."""

from __future__ import annotations

from typing import Any, Callable

from clients.admin import ListedOffset
from clients.admin.operations import Call, Operation, delete_records, list_offsets
from clients.protocol import ApiKey, ErrorCode, KafkaError


def metadata_response(leaders: dict[int, int]) -> dict[str, Any]:
    """Topic `t` with a partition per entry of {partition: leader}; brokers 1 and 2."""
    return {"brokers": [{"node_id": n, "host": "127.0.0.1", "port": 9000 + n} for n in (1, 2)],
            "controller_id": 1,
            "topics": [{"name": "t", "error_code": 0, "partitions": [
                {"partition_index": p, "leader_id": leader, "error_code": 0,
                 "replica_nodes": [1, 2], "isr_nodes": [1, 2]}
                for p, leader in leaders.items()]},
                       {"name": "gone", "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        "partitions": []}]}


def drive(operation: Operation, answer: Callable[[Call, dict[str, Any]], dict[str, Any]]
          ) -> tuple[Any, list[Call]]:
    """Run an operation, answering each call; returns its result and the calls made."""
    calls: list[Call] = []
    call = next(operation)
    while True:
        calls.append(call)
        try:
            call = operation.send(answer(call, call.build(7)))
        except StopIteration as stop:
            return stop.value, calls


def test_list_offsets_asks_each_leader_once_and_reports_errors_per_partition() -> None:
    def answer(call: Call, body: dict[str, Any]) -> dict[str, Any]:
        if call.api_key == ApiKey.METADATA:
            return metadata_response({0: 1, 1: 2, 2: 1, 3: -1})
        assert call.api_key == ApiKey.LIST_OFFSETS
        return {"topics": [{"name": t["name"], "partitions": [
            {"partition_index": p["partition_index"], "error_code": 0, "timestamp": -1,
             "offset": -1 if p["timestamp"] == -3 else 10 * call.node_id + p["partition_index"],
             "leader_epoch": 0} for p in t["partitions"]]} for t in body["topics"]]}

    wanted = {("t", 0): -1, ("t", 1): -1, ("t", 2): -3, ("t", 3): -1, ("t", 9): -1,
              ("gone", 0): -1}
    result, calls = drive(list_offsets(wanted), answer)
    leader_calls = [c for c in calls if c.api_key == ApiKey.LIST_OFFSETS]
    assert sorted(c.node_id for c in leader_calls) == [1, 2]
    assert result[("t", 0)] == ListedOffset(10, -1, 0)
    assert result[("t", 1)] == ListedOffset(21, -1, 0)
    assert result[("t", 2)] is None  # no record for max-timestamp
    assert isinstance(result[("t", 9)], KafkaError)
    assert result[("t", 9)].code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert "t-9 does not exist" in result[("t", 9)].message
    assert result[("gone", 0)].code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # Without a leader after every lookup, the partition reports it.
    assert result[("t", 3)].code == ErrorCode.LEADER_NOT_AVAILABLE


def test_delete_records_follows_a_moved_leader() -> None:
    lookups = []

    def answer(call: Call, body: dict[str, Any]) -> dict[str, Any]:
        if call.api_key == ApiKey.METADATA:
            lookups.append(1)
            return metadata_response({0: 1 if len(lookups) == 1 else 2, 1: 2})
        assert call.api_key == ApiKey.DELETE_RECORDS
        assert body["timeout_ms"] > 0
        return {"topics": [{"name": t["name"], "partitions": [
            {"partition_index": p["partition_index"], "low_watermark": p["offset"],
             "error_code": ErrorCode.NOT_LEADER_OR_FOLLOWER if call.node_id == 1
             else ErrorCode.OFFSET_OUT_OF_RANGE if p["partition_index"] == 1 else 0}
            for p in t["partitions"]]} for t in body["topics"]]}

    result, calls = drive(delete_records({("t", 0): 3, ("t", 1): 99}), answer)
    assert len(lookups) == 2
    assert result[("t", 0)] == 3
    assert isinstance(result[("t", 1)], KafkaError)
    assert result[("t", 1)].code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert [c.node_id for c in calls if c.api_key == ApiKey.DELETE_RECORDS] == [1, 2, 2]
