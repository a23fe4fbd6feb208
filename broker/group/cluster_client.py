"""The requests `raftka groups` sends: group listing and description, committed and log-end
offsets, offset commits and group deletion, over blocking Kafka connections."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from broker.group.admin_view import MemberRow, TopicPartition, consumer_assignment
from clients.net import BlockingKafkaConnection, KafkaConnectionError, parse_bootstrap_servers
from clients.consumer.group.offsets import offset_commit_errors, offset_commit_request
from clients.protocol import ApiKey, ErrorCode

logger = logging.getLogger(__name__)


class GroupAdminError(Exception):
    """A request failed; the message says which and why."""


def _check(code: int, what: str) -> None:
    if code:
        error = ErrorCode.from_code(code)
        raise GroupAdminError(f"{what} failed: {error.name} ({int(error)}): {error.message}")


@dataclass(frozen=True)
class DescribedGroup:
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberRow, ...]
    coordinator_id: int
    coordinator_host: str
    coordinator_port: int


class GroupAdmin:
    """Connections to the bootstrap broker, the group's coordinator and partition leaders."""

    def __init__(self, bootstrap_servers: str, client_id: str, timeout: float) -> None:
        self._client_id = client_id
        self._timeout = timeout
        self._connections: dict[tuple[str, int], BlockingKafkaConnection] = {}
        try:
            addresses = parse_bootstrap_servers(bootstrap_servers)
        except ValueError as exc:
            raise GroupAdminError(str(exc)) from None
        self._bootstrap = self._first_reachable(addresses)
        self._brokers: dict[int, tuple[str, int]] = {}

    def __enter__(self) -> "GroupAdmin":
        return self

    def __exit__(self, *exc: object) -> None:
        for conn in self._connections.values():
            conn.close()

    def _connect(self, address: tuple[str, int]) -> BlockingKafkaConnection:
        conn = self._connections.get(address)
        if conn is None:
            try:
                conn = BlockingKafkaConnection(*address, client_id=self._client_id,
                                               timeout=self._timeout)
            except (KafkaConnectionError, OSError) as exc:
                raise GroupAdminError(f"cannot connect to {address[0]}:{address[1]}: {exc}") from None
            self._connections[address] = conn
        return conn

    def _first_reachable(self, addresses: list[tuple[str, int]]) -> tuple[str, int]:
        errors = []
        for address in addresses:
            try:
                self._connect(address)
                return address
            except GroupAdminError as exc:
                errors.append(str(exc))
        raise GroupAdminError("; ".join(errors))

    def _request(self, address: tuple[str, int], api_key: int, body: dict[str, Any],
                 version: int | None = None) -> dict[str, Any]:
        try:
            return self._connect(address).request(api_key, body, version=version)
        except (KafkaConnectionError, OSError) as exc:
            self._connections.pop(address, None)
            raise GroupAdminError(f"request to {address[0]}:{address[1]} failed: {exc}") from None

    # -- cluster metadata ----------------------------------------------------------------

    def _metadata(self, topics: list[str] | None) -> dict[str, Any]:
        body = {"topics": None if topics is None else [{"name": t} for t in topics],
                "allow_auto_topic_creation": False}
        response = self._request(self._bootstrap, ApiKey.METADATA, body)
        self._brokers = {b["node_id"]: (b["host"], b["port"]) for b in response["brokers"]}
        return response

    def partitions_of(self, topic: str) -> list[int]:
        for entry in self._metadata([topic])["topics"]:
            if entry["name"] == topic:
                _check(entry["error_code"], f"looking up topic {topic}")
                return sorted(p["partition_index"] for p in entry["partitions"])
        raise GroupAdminError(f"topic {topic} does not exist")

    def _leaders(self, topics: Iterable[str]) -> dict[TopicPartition, int]:
        wanted = sorted(set(topics))
        if not wanted:
            return {}
        return {(t["name"], p["partition_index"]): p["leader_id"]
                for t in self._metadata(wanted)["topics"] for p in t["partitions"]}

    # -- groups --------------------------------------------------------------------------

    def _coordinator(self, group: str) -> tuple[int, tuple[str, int]]:
        response = self._request(self._bootstrap, ApiKey.FIND_COORDINATOR,
                                 {"key": group, "key_type": 0}, version=3)
        _check(response["error_code"], f"finding the coordinator of group {group}")
        return response["node_id"], (response["host"], response["port"])

    def list_groups(self) -> list[str]:
        self._metadata([])
        names: set[str] = set()
        for address in self._brokers.values():
            response = self._request(address, ApiKey.LIST_GROUPS, {})
            _check(response["error_code"], f"listing groups on {address[0]}:{address[1]}")
            names.update(g["group_id"] for g in response["groups"])
        return sorted(names)

    def describe_group(self, group: str) -> DescribedGroup:
        node_id, address = self._coordinator(group)
        response = self._request(address, ApiKey.DESCRIBE_GROUPS,
                                 {"groups": [group], "include_authorized_operations": False})
        entry = response["groups"][0]
        _check(entry["error_code"], f"describing group {group}")
        consumer = entry["protocol_type"] == "consumer"
        members = tuple(MemberRow(m["member_id"], m["client_host"], m["client_id"], tuple(
            consumer_assignment(bytes(m["member_assignment"])) if consumer else ()))
            for m in entry["members"])
        return DescribedGroup(entry["group_state"], entry["protocol_type"],
                              entry["protocol_data"], members, node_id, *address)

    def committed_offsets(self, group: str) -> dict[TopicPartition, int]:
        _, address = self._coordinator(group)
        response = self._request(address, ApiKey.OFFSET_FETCH,
                                 {"group_id": group, "topics": None}, version=7)
        _check(response.get("error_code", 0), f"fetching the offsets of group {group}")
        return {(t["name"], p["partition_index"]): p["committed_offset"]
                for t in response["topics"] for p in t["partitions"]
                if p["committed_offset"] >= 0}

    def commit_offsets(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit as a group without members would (generation -1, no member id)."""
        _, address = self._coordinator(group)
        response = self._request(address, ApiKey.OFFSET_COMMIT, offset_commit_request(
            group, -1, "", None, dict(sorted(offsets.items()))))
        for (topic, partition), code in offset_commit_errors(response).items():
            _check(code, f"committing {topic}-{partition}")

    def delete_group(self, group: str) -> None:
        _, address = self._coordinator(group)
        response = self._request(address, ApiKey.DELETE_GROUPS, {"groups_names": [group]})
        _check(response["results"][0]["error_code"], f"deleting group {group}")

    # -- partition offsets ---------------------------------------------------------------

    def offsets_for(self, timestamps: Mapping[TopicPartition, int], *,
                    require_all: bool = False) -> dict[TopicPartition, int]:
        """ListOffsets at each partition's leader (-1 latest, -2 earliest, else a time). A
        partition with no answer (no leader, no such partition, an error) is left out, or
        with `require_all` raises GroupAdminError naming it and why."""
        leaders = self._leaders(t for t, _ in timestamps)
        missing: dict[TopicPartition, str] = {}
        by_leader: dict[int, dict[str, list[dict[str, Any]]]] = {}
        for (topic, partition), timestamp in timestamps.items():
            leader = leaders.get((topic, partition))
            if leader is None:
                missing[(topic, partition)] = "no such partition"
                continue
            by_leader.setdefault(leader, {}).setdefault(topic, []).append(
                {"partition_index": partition, "current_leader_epoch": -1,
                 "timestamp": timestamp})
        out: dict[TopicPartition, int] = {}
        for leader, topics in by_leader.items():
            address = self._brokers.get(leader)
            if address is None:
                for topic, partitions in topics.items():
                    for p in partitions:
                        missing[(topic, p["partition_index"])] = "no leader"
                continue
            response = self._request(address, ApiKey.LIST_OFFSETS, {
                "replica_id": -1, "isolation_level": 0,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]})
            for t in response["topics"]:
                for p in t["partitions"]:
                    tp = (t["name"], p["partition_index"])
                    if p["error_code"] == 0:
                        out[tp] = p["offset"]
                    else:
                        missing[tp] = ErrorCode.from_code(p["error_code"]).name
        missing.update({tp: "no answer" for tp in timestamps
                        if tp not in out and tp not in missing})
        if missing:
            described = ", ".join(f"{t}-{p} ({why})" for (t, p), why in sorted(missing.items()))
            if require_all:
                raise GroupAdminError(f"no offset for {described}")
            logger.warning("no offset for %s", described)
        return out

    def log_end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self.offsets_for({tp: -1 for tp in partitions})
