"""Consumer-group APIs before the group coordinator exists: COORDINATOR_NOT_AVAILABLE.

Each answer puts the error where that API's clients look for it (top level, per group, per
partition or per coordinator key), so clients back off and retry instead of failing.
"""

from __future__ import annotations

from typing import Any, Callable

from broker.network.router import ConnectionContext, DecodedRequest, RequestRouter
from clients.protocol import ApiKey, ErrorCode

BodyBuilder = Callable[[DecodedRequest | None, int], dict]


def _body(request: DecodedRequest | None) -> dict[str, Any]:
    return {} if request is None else request.body


def _version(request: DecodedRequest | None) -> int:
    return 0 if request is None else request.api_version


def find_coordinator_body(request: DecodedRequest | None, code: int) -> dict:
    if _version(request) < 4:
        return {"throttle_time_ms": 0, "error_code": code, "error_message": None,
                "node_id": -1, "host": "", "port": -1}
    keys = _body(request).get("coordinator_keys") or []
    return {"throttle_time_ms": 0, "coordinators": [
        {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": code,
         "error_message": None} for key in keys]}


def join_group_body(request: DecodedRequest | None, code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "generation_id": -1,
            "protocol_type": None, "protocol_name": None if _version(request) >= 7 else "",
            "leader": "", "skip_assignment": False,
            "member_id": _body(request).get("member_id", ""), "members": []}


def sync_group_body(request: DecodedRequest | None, code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "protocol_type": None,
            "protocol_name": None, "assignment": b""}


def heartbeat_body(request: DecodedRequest | None, code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": code}


def leave_group_body(request: DecodedRequest | None, code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "members": []}


def list_groups_body(request: DecodedRequest | None, code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "groups": []}


def describe_groups_body(request: DecodedRequest | None, code: int) -> dict:
    return {"throttle_time_ms": 0, "groups": [
        {"error_code": code, "group_id": group, "group_state": "", "protocol_type": "",
         "protocol_data": "", "members": []}
        for group in _body(request).get("groups") or ()]}


def delete_groups_body(request: DecodedRequest | None, code: int) -> dict:
    return {"throttle_time_ms": 0, "results": [
        {"group_id": group, "error_code": code}
        for group in _body(request).get("groups_names") or ()]}


def offset_commit_body(request: DecodedRequest | None, code: int) -> dict:
    return {"throttle_time_ms": 0, "topics": [
        {"name": t["name"], "partitions": [
            {"partition_index": p["partition_index"], "error_code": code}
            for p in t.get("partitions") or ()]}
        for t in _body(request).get("topics") or ()]}


def _offset_fetch_topics(topics: list[dict[str, Any]] | None, code: int) -> list[dict[str, Any]]:
    return [{"name": t["name"], "partitions": [
        {"partition_index": index, "committed_offset": -1, "committed_leader_epoch": -1,
         "metadata": "", "error_code": code}
        for index in t.get("partition_indexes") or ()]} for t in topics or ()]


def offset_fetch_body(request: DecodedRequest | None, code: int) -> dict:
    body = _body(request)
    if _version(request) >= 8:
        return {"throttle_time_ms": 0, "groups": [
            {"group_id": g["group_id"], "topics": _offset_fetch_topics(g.get("topics"), code),
             "error_code": code} for g in body.get("groups") or ()]}
    # v2+ clients read the top-level code; v1 only has the per-partition ones.
    return {"throttle_time_ms": 0, "error_code": code,
            "topics": _offset_fetch_topics(body.get("topics"), code)}


GROUP_API_BODIES: dict[int, BodyBuilder] = {
    ApiKey.FIND_COORDINATOR: find_coordinator_body,
    ApiKey.JOIN_GROUP: join_group_body,
    ApiKey.SYNC_GROUP: sync_group_body,
    ApiKey.HEARTBEAT: heartbeat_body,
    ApiKey.LEAVE_GROUP: leave_group_body,
    ApiKey.LIST_GROUPS: list_groups_body,
    ApiKey.DESCRIBE_GROUPS: describe_groups_body,
    ApiKey.DELETE_GROUPS: delete_groups_body,
    ApiKey.OFFSET_COMMIT: offset_commit_body,
    ApiKey.OFFSET_FETCH: offset_fetch_body,
}


def _unavailable_handler(build: BodyBuilder) -> Callable[[DecodedRequest, ConnectionContext], Any]:
    async def handle(request: DecodedRequest, ctx: ConnectionContext) -> dict:
        return build(request, ErrorCode.COORDINATOR_NOT_AVAILABLE)

    return handle


def install_coordinator_unavailable(router: RequestRouter) -> None:
    """Answer every group API with COORDINATOR_NOT_AVAILABLE (until a coordinator registers
    its own handlers over these)."""
    for api_key, build in GROUP_API_BODIES.items():
        router.register(api_key, _unavailable_handler(build), build)
