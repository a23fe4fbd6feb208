"""Consumer-group operations of the admin client, as I/O-free generators like
``clients.admin.operations``: list, describe and delete groups; list, alter and delete a
group's committed offsets.

Group requests go to the group's coordinator (found with FindCoordinator), ListGroups to
every broker. Errors raise ``KafkaError``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from clients.admin.cluster import BrokerNode, ClusterMetadata, metadata_request
from clients.admin.operations import Call, Operation, _fixed, _raise_for
from clients.consumer.group.offsets import offset_commit_errors, offset_commit_request
from clients.consumer.group.protocol import TopicPartition, decode_assignment
from clients.protocol import ApiKey, ProtocolError

GROUP_KEY_TYPE = 0


@dataclass(frozen=True)
class MemberDescription:
    """A group member; `partitions` is its assignment when the group is a consumer group."""

    member_id: str
    host: str
    client_id: str
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...]
    coordinator: BrokerNode


def consumer_assignment(data: bytes) -> tuple[TopicPartition, ...]:
    """The partitions in a ConsumerProtocol assignment (empty when unreadable)."""
    try:
        return tuple(decode_assignment(data).partitions)
    except ProtocolError:
        return ()


def _brokers() -> Operation:
    response = yield Call(ApiKey.METADATA, _fixed(metadata_request([])))
    return ClusterMetadata.from_response(response).brokers


def find_coordinator(group: str) -> Operation:
    """The broker coordinating `group`."""
    def build(version: int) -> dict[str, Any]:
        if version >= 4:
            return {"key_type": GROUP_KEY_TYPE, "coordinator_keys": [group]}
        return {"key_type": GROUP_KEY_TYPE, "key": group}

    response = yield Call(ApiKey.FIND_COORDINATOR, build)
    entry = response["coordinators"][0] if response.get("coordinators") else response
    _raise_for(entry["error_code"], entry.get("error_message"),
               f"finding the coordinator of group {group}")
    return BrokerNode(entry["node_id"], entry["host"], entry["port"])


def list_groups() -> Operation:
    """Every group any broker coordinates, sorted."""
    brokers: dict[int, BrokerNode] = yield from _brokers()
    names: set[str] = set()
    for node in brokers.values():
        response = yield Call(ApiKey.LIST_GROUPS, _fixed({}), node_id=node.node_id)
        _raise_for(response["error_code"], None,
                   f"listing groups on {node.host}:{node.port}")
        names.update(g["group_id"] for g in response["groups"])
    return sorted(names)


def describe_groups(groups: Iterable[str]) -> Operation:
    """A GroupDescription per group (state "Dead" for one that does not exist)."""
    described = []
    for group in groups:
        coordinator = yield from find_coordinator(group)
        response = yield Call(ApiKey.DESCRIBE_GROUPS, _fixed(
            {"groups": [group], "include_authorized_operations": False}),
            node_id=coordinator.node_id)
        entry = response["groups"][0]
        _raise_for(entry["error_code"], None, f"describing group {group}")
        consumer = entry["protocol_type"] == "consumer"
        members = tuple(MemberDescription(
            m["member_id"], m["client_host"], m["client_id"],
            consumer_assignment(bytes(m["member_assignment"])) if consumer else ())
            for m in entry["members"])
        described.append(GroupDescription(group, entry["group_state"], entry["protocol_type"],
                                          entry["protocol_data"], members, coordinator))
    return described


def delete_groups(groups: Iterable[str]) -> Operation:
    """Delete groups without members (Kafka refuses the others: NON_EMPTY_GROUP)."""
    for group in groups:
        coordinator = yield from find_coordinator(group)
        response = yield Call(ApiKey.DELETE_GROUPS, _fixed({"groups_names": [group]}),
                              node_id=coordinator.node_id)
        _raise_for(response["results"][0]["error_code"], None, f"deleting group {group}")


def list_group_offsets(group: str) -> Operation:
    """The group's committed offsets, {(topic, partition): offset}."""
    coordinator = yield from find_coordinator(group)

    def build(version: int) -> dict[str, Any]:
        if version >= 8:
            return {"groups": [{"group_id": group, "topics": None}], "require_stable": False}
        return {"group_id": group, "topics": None, "require_stable": False}

    response = yield Call(ApiKey.OFFSET_FETCH, build, node_id=coordinator.node_id)
    if "groups" in response:
        response = response["groups"][0]
    _raise_for(response.get("error_code", 0), None, f"fetching the offsets of group {group}")
    return {(t["name"], p["partition_index"]): p["committed_offset"]
            for t in response["topics"] for p in t["partitions"]
            if p["committed_offset"] >= 0}


def alter_group_offsets(group: str, offsets: Mapping[TopicPartition, int]) -> Operation:
    """Commit `offsets` as a group without members would (generation -1, no member id)."""
    coordinator = yield from find_coordinator(group)
    response = yield Call(ApiKey.OFFSET_COMMIT, _fixed(offset_commit_request(
        group, -1, "", None, dict(sorted(offsets.items())))),
        node_id=coordinator.node_id)
    for (topic, partition), code in offset_commit_errors(response).items():
        _raise_for(code, None, f"committing {topic}-{partition}")


def delete_group_offsets(group: str, partitions: Iterable[TopicPartition]) -> Operation:
    """Delete the group's committed offsets of `partitions` (OffsetDelete); a partition of a
    topic the group's members consume is refused (GROUP_SUBSCRIBED_TO_TOPIC)."""
    wanted = sorted(set(partitions))
    coordinator = yield from find_coordinator(group)
    topics: dict[str, list[dict[str, int]]] = {}
    for topic, partition in wanted:
        topics.setdefault(topic, []).append({"partition_index": partition})
    response = yield Call(ApiKey.OFFSET_DELETE, _fixed({"group_id": group, "topics": [
        {"name": name, "partitions": parts} for name, parts in topics.items()]}),
        node_id=coordinator.node_id)
    _raise_for(response["error_code"], None, f"deleting offsets of group {group}")
    for topic in response["topics"]:
        for p in topic["partitions"]:
            _raise_for(p["error_code"], None,
                       f"deleting the offset of {topic['name']}-{p['partition_index']}")
