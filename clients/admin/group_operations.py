"""Admin operations on consumer groups and the metadata quorum, as I/O-free generators
(see ``operations``): list, describe and delete groups; list, alter and delete a group's
committed offsets; and DescribeQuorum.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from clients.admin.operations import Call, Operation, TopicPartition, _fixed, _raise_for, metadata
from clients.consumer.group.offsets import offset_commit_errors, offset_commit_request
from clients.consumer.group.protocol import decode_assignment
from clients.protocol import ApiKey, ErrorCode, KafkaError, ProtocolError

# KRaft's metadata log: the one partition DescribeQuorum reports on.
METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = 0
GROUP_COORDINATOR = 0


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str | None  # None from brokers older than ListGroups v4


@dataclass(frozen=True)
class GroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[GroupMember, ...]
    coordinator_id: int


@dataclass(frozen=True)
class ReplicaState:
    replica_id: int
    log_end_offset: int
    last_caught_up_timestamp: int


@dataclass(frozen=True)
class QuorumInfo:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaState, ...]
    observers: tuple[ReplicaState, ...]


def _assignment(data: bytes | None, protocol_type: str) -> tuple[TopicPartition, ...]:
    """A consumer member's partitions; nothing for other protocols or unreadable data."""
    if protocol_type != "consumer" or not data:
        return ()
    try:
        return tuple(decode_assignment(bytes(data)).partitions)
    except ProtocolError:
        return ()


def list_groups() -> Operation:
    """Every group on every broker (each broker lists the groups it coordinates)."""
    cluster = yield from metadata([])
    found: dict[str, GroupListing] = {}
    for node_id in sorted(cluster.brokers):
        response = yield Call(ApiKey.LIST_GROUPS, lambda v: {"states_filter": []},
                              node_id=node_id)
        _raise_for(response["error_code"], None, f"ListGroups on broker {node_id}")
        for g in response["groups"]:
            found[g["group_id"]] = GroupListing(g["group_id"], g["protocol_type"],
                                                g.get("group_state"))
    return [found[name] for name in sorted(found)]


def find_coordinator(group: str) -> Operation:
    """The id of the broker coordinating ``group``."""
    def build(version: int) -> dict[str, Any]:
        if version >= 4:
            return {"key_type": GROUP_COORDINATOR, "coordinator_keys": [group]}
        return {"key": group, "key_type": GROUP_COORDINATOR}

    response = yield Call(ApiKey.FIND_COORDINATOR, build)
    entry = response["coordinators"][0] if response.get("coordinators") else response
    _raise_for(entry["error_code"], entry.get("error_message"),
               f"finding the coordinator of group {group}")
    return entry["node_id"]


def find_group_coordinators(groups: Iterable[str]) -> Operation:
    """{group: the id of its coordinator, or KafkaError}: one FindCoordinator (v4+) for
    all the groups; one per group from older brokers."""
    names = list(dict.fromkeys(groups))
    out: dict[str, int | KafkaError] = {}
    if not names:
        return out

    def build(version: int) -> dict[str, Any]:
        if version >= 4:
            return {"key_type": GROUP_COORDINATOR, "coordinator_keys": names}
        return {"key": names[0], "key_type": GROUP_COORDINATOR}

    response = yield Call(ApiKey.FIND_COORDINATOR, build)
    entries = response.get("coordinators")
    if entries is None:  # before v4: the answer for the first group only
        entries = [{**response, "key": names[0]}]
    for entry in entries:
        if entry["error_code"] == ErrorCode.NONE:
            out[entry["key"]] = entry["node_id"]
        else:
            error = ErrorCode.from_code(entry["error_code"])
            out[entry["key"]] = KafkaError(error, entry.get("error_message") or (
                f"finding the coordinator of group {entry['key']}: {error.message}"))
    for group in [g for g in names if g not in out]:
        try:
            out[group] = yield from find_coordinator(group)
        except KafkaError as exc:
            out[group] = exc
    return out


def describe_groups(groups: Iterable[str]) -> Operation:
    """{group: GroupDescription or KafkaError}, each asked of its coordinator."""
    out: dict[str, GroupDescription | KafkaError] = {}
    by_coordinator: dict[int, list[str]] = {}
    coordinators = yield from find_group_coordinators(groups)
    for group, node_id in coordinators.items():
        if isinstance(node_id, KafkaError):
            out[group] = node_id
            continue
        by_coordinator.setdefault(node_id, []).append(group)
    for node_id, names in sorted(by_coordinator.items()):
        body = {"groups": names, "include_authorized_operations": False}
        response = yield Call(ApiKey.DESCRIBE_GROUPS, _fixed(body), node_id=node_id)
        for g in response["groups"]:
            if g["error_code"] != ErrorCode.NONE:
                error = ErrorCode.from_code(g["error_code"])
                out[g["group_id"]] = KafkaError(error, f"group {g['group_id']}: "
                                                       f"{error.message}")
                continue
            members = tuple(GroupMember(
                m["member_id"], m.get("group_instance_id"), m["client_id"], m["client_host"],
                _assignment(m["member_assignment"], g["protocol_type"])) for m in g["members"])
            out[g["group_id"]] = GroupDescription(g["group_id"], g["group_state"],
                                                  g["protocol_type"], g["protocol_data"],
                                                  members, node_id)
    return out


def list_group_offsets(group: str) -> Operation:
    """The group's committed offsets, {partition: offset}, from its coordinator."""
    node_id = yield from find_coordinator(group)

    def build(version: int) -> dict[str, Any]:
        if version >= 8:
            return {"groups": [{"group_id": group, "topics": None}], "require_stable": False}
        return {"group_id": group, "topics": None, "require_stable": False}

    response = yield Call(ApiKey.OFFSET_FETCH, build, node_id=node_id)
    if response.get("groups"):
        entry = response["groups"][0]
        _raise_for(entry["error_code"], None, f"fetching the offsets of group {group}")
        topics = entry["topics"]
    else:
        _raise_for(response.get("error_code", 0), None, f"fetching the offsets of group {group}")
        topics = response["topics"]
    return {(t["name"], p["partition_index"]): p["committed_offset"]
            for t in topics for p in t["partitions"]
            if p["error_code"] == ErrorCode.NONE and p["committed_offset"] >= 0}



def delete_groups(groups: Iterable[str]) -> Operation:
    """Delete groups without members (Kafka refuses the others: NON_EMPTY_GROUP)."""
    for group in groups:
        node_id = yield from find_coordinator(group)
        response = yield Call(ApiKey.DELETE_GROUPS, _fixed({"groups_names": [group]}),
                              node_id=node_id)
        _raise_for(response["results"][0]["error_code"], None, f"deleting group {group}")


def alter_group_offsets(group: str, offsets: Mapping[TopicPartition, int]) -> Operation:
    """Commit `offsets` as a group without members would (generation -1, no member id)."""
    node_id = yield from find_coordinator(group)
    response = yield Call(ApiKey.OFFSET_COMMIT, _fixed(offset_commit_request(
        group, -1, "", None, dict(sorted(offsets.items())))), node_id=node_id)
    for (topic, partition), code in offset_commit_errors(response).items():
        _raise_for(code, None, f"committing {topic}-{partition}")


def delete_group_offsets(group: str, partitions: Iterable[TopicPartition]) -> Operation:
    """Delete the group's committed offsets of `partitions` (OffsetDelete); a partition of a
    topic the group's members consume is refused (GROUP_SUBSCRIBED_TO_TOPIC)."""
    codes = yield from delete_group_offsets_each(group, partitions)
    for (topic, partition), code in sorted(codes.items()):
        _raise_for(code, None, f"deleting the offset of {topic}-{partition}")


def delete_group_offsets_each(group: str, partitions: Iterable[TopicPartition]) -> Operation:
    """OffsetDelete with each partition's outcome: {partition: ErrorCode}. A group-level
    error (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, ...) raises KafkaError."""
    node_id = yield from find_coordinator(group)
    topics: dict[str, list[dict[str, int]]] = {}
    for topic, partition in sorted(set(partitions)):
        topics.setdefault(topic, []).append({"partition_index": partition})
    response = yield Call(ApiKey.OFFSET_DELETE, _fixed({"group_id": group, "topics": [
        {"name": name, "partitions": parts} for name, parts in topics.items()]}),
        node_id=node_id)
    _raise_for(response["error_code"], None, f"deleting offsets of group {group}")
    return {(topic["name"], p["partition_index"]): ErrorCode.from_code(p["error_code"])
            for topic in response["topics"] for p in topic["partitions"]}


def _replicas(entries: Iterable[dict[str, Any]]) -> tuple[ReplicaState, ...]:
    return tuple(ReplicaState(r["replica_id"], r["log_end_offset"],
                              r.get("last_caught_up_timestamp", -1)) for r in entries)


def describe_quorum() -> Operation:
    """The metadata quorum: leader, epoch, high watermark, voters and observers with their
    log end offsets (any broker forwards DescribeQuorum to the controllers)."""
    body = {"topics": [{"topic_name": METADATA_TOPIC,
                        "partitions": [{"partition_index": METADATA_PARTITION}]}]}
    response = yield Call(ApiKey.DESCRIBE_QUORUM, _fixed(body))
    _raise_for(response["error_code"], response.get("error_message"), "DescribeQuorum")
    for topic in response["topics"]:
        for p in topic["partitions"]:
            if p["partition_index"] != METADATA_PARTITION:
                continue
            _raise_for(p["error_code"], p.get("error_message"), "DescribeQuorum")
            return QuorumInfo(p["leader_id"], p["leader_epoch"], p["high_watermark"],
                              _replicas(p["current_voters"]), _replicas(p["observers"]))
    raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                     f"DescribeQuorum: no answer for {METADATA_TOPIC}-{METADATA_PARTITION}")
