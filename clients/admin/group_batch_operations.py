"""Committed offsets of many groups at once, as Kafka's admin client reads them: the
coordinators of all groups in one FindCoordinator (v4+), then one OffsetFetch (v8+) per
coordinator for all the groups it coordinates. Older brokers are asked one group at a time."""

from __future__ import annotations

from typing import Any, Iterable

from clients.admin.group_operations import find_group_coordinators
from clients.admin.operations import Call, Operation, TopicPartition
from clients.protocol import ApiKey, ErrorCode, KafkaError

GroupOffsets = dict[TopicPartition, int]


def _error(code: int, subject: str) -> KafkaError:
    error = ErrorCode.from_code(code)
    return KafkaError(error, f"{subject}: {error.message}")


def _offsets(topics: list[dict[str, Any]]) -> GroupOffsets:
    return {(t["name"], p["partition_index"]): p["committed_offset"]
            for t in topics for p in t["partitions"]
            if p["error_code"] == ErrorCode.NONE and p["committed_offset"] >= 0}


def list_groups_offsets(groups: Iterable[str]) -> Operation:
    """{group: its committed offsets {partition: offset}, or KafkaError}."""
    coordinators = yield from find_group_coordinators(groups)
    out: dict[str, GroupOffsets | KafkaError] = {
        g: c for g, c in coordinators.items() if isinstance(c, KafkaError)}
    by_coordinator: dict[int, list[str]] = {}
    for group, node in coordinators.items():
        if not isinstance(node, KafkaError):
            by_coordinator.setdefault(node, []).append(group)
    for node_id, names in sorted(by_coordinator.items()):
        pending = list(names)
        while pending:
            asked = pending

            def build(version: int, asked: list[str] = asked) -> dict[str, Any]:
                if version >= 8:
                    return {"groups": [{"group_id": g, "topics": None} for g in asked],
                            "require_stable": False}
                return {"group_id": asked[0], "topics": None, "require_stable": False}

            response = yield Call(ApiKey.OFFSET_FETCH, build, node_id=node_id)
            if response.get("groups") is not None:
                for entry in response["groups"]:
                    out[entry["group_id"]] = _offsets(entry["topics"]) \
                        if entry["error_code"] == ErrorCode.NONE else _error(
                            entry["error_code"], f"fetching the offsets of group {entry['group_id']}")
                pending = [g for g in asked if g not in out]
                if pending == asked:  # the broker named none of them: do not ask again
                    break
            else:
                code = response.get("error_code", 0)
                out[asked[0]] = _offsets(response["topics"]) if code == ErrorCode.NONE \
                    else _error(code, f"fetching the offsets of group {asked[0]}")
                pending = asked[1:]
    return out
