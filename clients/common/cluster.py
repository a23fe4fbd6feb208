"""The client's view of the cluster, from a Metadata response (pure, no I/O).

Shared by the producer, consumer and admin client: which brokers exist, where they listen,
which broker leads each partition.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from clients.protocol import ErrorCode, ZERO_UUID


@dataclass(frozen=True, slots=True)
class BrokerNode:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    error_code: int = 0


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    error_code: int
    is_internal: bool
    partitions: Mapping[int, PartitionInfo] = field(default_factory=dict)


def metadata_request(topics: Iterable[str] | None,
                     allow_auto_topic_creation: bool = False) -> dict[str, Any]:
    """A Metadata request body for ``topics`` (None: every topic)."""
    body: dict[str, Any] = {
        "topics": None if topics is None else [{"name": t} for t in topics],
        "allow_auto_topic_creation": allow_auto_topic_creation,
    }
    return body


@dataclass(frozen=True)
class ClusterMetadata:
    """An immutable snapshot of one Metadata response."""

    brokers: Mapping[int, BrokerNode] = field(default_factory=dict)
    topics: Mapping[str, TopicInfo] = field(default_factory=dict)
    cluster_id: str | None = None
    controller_id: int = -1
    # Derived per topic on first use: a producer asks for every record it partitions.
    _available: dict[str, list[int]] = field(default_factory=dict, init=False, repr=False,
                                             compare=False)

    @classmethod
    def from_response(cls, body: Mapping[str, Any]) -> ClusterMetadata:
        brokers = {b["node_id"]: BrokerNode(b["node_id"], b["host"], b["port"], b.get("rack"))
                   for b in body.get("brokers", ())}
        topics: dict[str, TopicInfo] = {}
        for t in body.get("topics", ()):
            name = t["name"]
            if name is None:
                continue
            partitions = {
                p["partition_index"]: PartitionInfo(
                    topic=name, partition=p["partition_index"], leader=p["leader_id"],
                    leader_epoch=p.get("leader_epoch", -1),
                    replicas=tuple(p["replica_nodes"]), isr=tuple(p["isr_nodes"]),
                    offline_replicas=tuple(p.get("offline_replicas") or ()),
                    error_code=p["error_code"])
                for p in t.get("partitions", ())
            }
            topics[name] = TopicInfo(name, t.get("topic_id") or ZERO_UUID, t["error_code"],
                                     bool(t.get("is_internal", False)), partitions)
        return cls(brokers, topics, body.get("cluster_id"), body.get("controller_id", -1))

    def merged_with(self, newer: ClusterMetadata) -> ClusterMetadata:
        """``newer`` for the topics it describes, this snapshot's other topics kept."""
        topics = dict(self.topics)
        topics.update(newer.topics)
        return ClusterMetadata(newer.brokers or self.brokers, topics,
                               newer.cluster_id or self.cluster_id, newer.controller_id)

    def topic_error(self, topic: str) -> ErrorCode | None:
        """The topic's error from the last Metadata answer, None when it is usable."""
        info = self.topics.get(topic)
        if info is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if info.error_code != ErrorCode.NONE:
            return ErrorCode.from_code(info.error_code)
        return None

    def partition_count(self, topic: str) -> int | None:
        info = self.topics.get(topic)
        if info is None or info.error_code != ErrorCode.NONE or not info.partitions:
            return None
        return len(info.partitions)

    def available_partitions(self, topic: str) -> list[int]:
        """Partitions of ``topic`` whose leader is a known broker (do not modify the list)."""
        cached = self._available.get(topic)
        if cached is None:
            info = self.topics.get(topic)
            cached = [] if info is None else sorted(
                p.partition for p in info.partitions.values() if p.leader in self.brokers)
            self._available[topic] = cached
        return cached

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        info = self.topics.get(topic)
        return None if info is None else info.partitions.get(partition)

    def leader_for(self, topic: str, partition: int) -> BrokerNode | None:
        """The partition's leader, None if unknown, missing or not among the brokers."""
        info = self.partition(topic, partition)
        if info is None or info.leader < 0:
            return None
        return self.brokers.get(info.leader)
