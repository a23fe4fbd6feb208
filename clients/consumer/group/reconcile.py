"""Decisions of a KIP-848 member (``group.protocol=consumer``), without I/O.

The coordinator hands a member its target assignment as topic ids and partitions; the
member resolves the ids to names through metadata, revokes what it owns but is no longer
assigned, then takes on what is new (incremental, as with cooperative rebalancing), and
acknowledges with the partitions it owns. ``HeartbeatFields`` decides which optional fields
a ConsumerGroupHeartbeat carries: all of them when joining (or after a failed request),
otherwise only those that changed since the last one sent, as Kafka's client does.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from clients.consumer.group.protocol import TopicPartition

# A target assignment: partitions per topic id.
TopicIdAssignment = Mapping[uuid.UUID, frozenset[int]]

JOIN_EPOCH = 0
LEAVE_EPOCH = -1           # a dynamic member leaves for good
STATIC_LEAVE_EPOCH = -2    # a static member leaves, keeping its place for a restart


def leave_epoch(group_instance_id: str | None) -> int:
    """The epoch a leaving member sends: static members keep their place for a restart."""
    return STATIC_LEAVE_EPOCH if group_instance_id is not None else LEAVE_EPOCH


def read_assignment(assignment: Mapping[str, Any] | None) -> dict[uuid.UUID, frozenset[int]] | None:
    """The ``assignment`` of a ConsumerGroupHeartbeat answer; None when it is absent (the
    target did not change)."""
    if assignment is None:
        return None
    out: dict[uuid.UUID, set[int]] = {}
    for topic in assignment.get("topic_partitions") or ():
        out.setdefault(topic["topic_id"], set()).update(topic["partitions"])
    return {tid: frozenset(ps) for tid, ps in out.items()}


@dataclass(frozen=True)
class Resolved:
    """A target assignment in names: the partitions whose topic is known, and the topic ids
    still to look up (their partitions wait; the member asks for metadata)."""

    partitions: tuple[TopicPartition, ...]
    unknown_ids: frozenset[uuid.UUID]


def resolve(target: TopicIdAssignment, names: Mapping[uuid.UUID, str]) -> Resolved:
    partitions: list[TopicPartition] = []
    unknown: set[uuid.UUID] = set()
    for tid, ps in target.items():
        name = names.get(tid)
        if name is None:
            unknown.add(tid)
        else:
            partitions.extend((name, p) for p in ps)
    return Resolved(tuple(sorted(partitions)), frozenset(unknown))


@dataclass(frozen=True)
class Reconciliation:
    """One step from what the member owns to its target: revoke first, then add."""

    revoke: tuple[TopicPartition, ...]
    add: tuple[TopicPartition, ...]
    assignment: tuple[TopicPartition, ...]    # owned once both are done

    @property
    def changes(self) -> bool:
        return bool(self.revoke or self.add)


def reconcile(owned: Iterable[TopicPartition], target: Iterable[TopicPartition]
              ) -> Reconciliation:
    """What moving from ``owned`` to ``target`` revokes and adds (sorted)."""
    have, want = set(owned), set(target)
    return Reconciliation(tuple(sorted(have - want)), tuple(sorted(want - have)),
                          tuple(sorted(want)))


def owned_by_topic_id(owned: Iterable[TopicPartition], ids: Mapping[str, uuid.UUID]
                      ) -> list[dict[str, Any]]:
    """The ``topic_partitions`` of a heartbeat: owned partitions by topic id, sorted."""
    by_id: dict[uuid.UUID, list[int]] = {}
    for topic, partition in owned:
        by_id.setdefault(ids[topic], []).append(partition)
    return [{"topic_id": tid, "partitions": sorted(ps)}
            for tid, ps in sorted(by_id.items(), key=lambda item: str(item[0]))]


@dataclass
class HeartbeatFields:
    """The optional heartbeat fields last sent, so the next heartbeat sends only changes."""

    rebalance_timeout_ms: int | None = None
    subscribed: tuple[str, ...] | None = None
    regex: str | None = None
    server_assignor: str | None = None
    owned: tuple[TopicPartition, ...] | None = None

    def reset(self) -> None:
        """Forget what was sent (after a failed request or a new join): send all again."""
        self.rebalance_timeout_ms = self.subscribed = self.regex = None
        self.server_assignor = self.owned = None

    def request(self, *, group_id: str, member_id: str, member_epoch: int,
                instance_id: str | None, rebalance_timeout_ms: int,
                subscription: Sequence[str], server_assignor: str | None,
                owned: Sequence[TopicPartition], topic_ids: Mapping[str, uuid.UUID],
                full: bool, regex: str | None = None) -> dict[str, Any]:
        """The ConsumerGroupHeartbeat body; records what it sends. ``full``: the member is
        joining, so every field goes. A member subscribed by pattern sends ``regex``
        (v1) in place of topic names."""
        if full:
            self.reset()
        body: dict[str, Any] = {
            "group_id": group_id, "member_id": member_id, "member_epoch": member_epoch,
            "instance_id": instance_id, "rack_id": None, "rebalance_timeout_ms": -1,
            "subscribed_topic_names": None, "subscribed_topic_regex": None,
            "server_assignor": None, "topic_partitions": None}
        if self.rebalance_timeout_ms != rebalance_timeout_ms:
            body["rebalance_timeout_ms"] = self.rebalance_timeout_ms = rebalance_timeout_ms
        topics = tuple(sorted(subscription))
        if regex is not None:
            if self.regex != regex:
                body["subscribed_topic_regex"] = self.regex = regex
        elif self.subscribed != topics:
            body["subscribed_topic_names"] = list(topics)
            self.subscribed = topics
        if server_assignor is not None and self.server_assignor != server_assignor:
            body["server_assignor"] = self.server_assignor = server_assignor
        mine = tuple(sorted(owned))
        if self.owned != mine:
            body["topic_partitions"] = owned_by_topic_id(mine, topic_ids)
            self.owned = mine
        return body

    def leave(self, *, group_id: str, member_id: str, instance_id: str | None
              ) -> dict[str, Any]:
        """The heartbeat that leaves the group (epoch -1, or -2 for a static member)."""
        self.reset()
        return {"group_id": group_id, "member_id": member_id,
                "member_epoch": leave_epoch(instance_id), "instance_id": instance_id,
                "rack_id": None, "rebalance_timeout_ms": -1, "subscribed_topic_names": None,
                "subscribed_topic_regex": None, "server_assignor": None,
                "topic_partitions": None}
