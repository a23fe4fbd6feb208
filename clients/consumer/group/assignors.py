"""Kafka's eager partition assignors, run by the group leader.

Both order members as Kafka does: static members (with a ``group.instance.id``) first by
instance id, then dynamic members by member id; so every client computing an assignment
for the same group gets the same answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Protocol

from clients.consumer.group.protocol import TopicPartition


@dataclass(frozen=True)
class MemberSubscription:
    """What the leader knows of one member from its JoinGroup metadata."""

    member_id: str
    topics: tuple[str, ...]
    group_instance_id: str | None = None


def _member_order(member: MemberSubscription) -> tuple[int, str]:
    if member.group_instance_id is not None:
        return (0, member.group_instance_id)
    return (1, member.member_id)


def sorted_members(members: Iterable[MemberSubscription]) -> list[MemberSubscription]:
    return sorted(members, key=_member_order)


class Assignor(Protocol):
    """An assignor: its ``partition.assignment.strategy`` name and its algorithm."""

    name: str

    def assign(self, partition_counts: Mapping[str, int],
               members: Iterable[MemberSubscription]) -> dict[str, list[TopicPartition]]:
        """Partitions per member id; topics missing from ``partition_counts`` are skipped."""
        ...


class RangeAssignor:
    """Per topic, consecutive ranges of partitions; the first members get one extra when
    the partitions do not divide evenly."""

    name = "range"

    def assign(self, partition_counts: Mapping[str, int],
               members: Iterable[MemberSubscription]) -> dict[str, list[TopicPartition]]:
        ordered = sorted_members(members)
        result: dict[str, list[TopicPartition]] = {m.member_id: [] for m in ordered}
        for topic in sorted({t for m in ordered for t in m.topics}):
            count = partition_counts.get(topic)
            if count is None:
                continue
            consumers = [m for m in ordered if topic in m.topics]
            per_member, extra = divmod(count, len(consumers))
            for i, member in enumerate(consumers):
                start = per_member * i + min(i, extra)
                length = per_member + (1 if i < extra else 0)
                result[member.member_id].extend(
                    (topic, p) for p in range(start, start + length))
        return result


class RoundRobinAssignor:
    """Every partition of every subscribed topic, sorted by topic then partition, dealt
    to the members in turn, skipping members not subscribed to the partition's topic."""

    name = "roundrobin"

    def assign(self, partition_counts: Mapping[str, int],
               members: Iterable[MemberSubscription]) -> dict[str, list[TopicPartition]]:
        ordered = sorted_members(members)
        result: dict[str, list[TopicPartition]] = {m.member_id: [] for m in ordered}
        if not ordered:
            return result
        turn = 0
        for topic in sorted({t for m in ordered for t in m.topics}):
            for partition in range(partition_counts.get(topic, 0)):
                # Someone subscribes to every topic in the set, so this ends.
                while topic not in ordered[turn].topics:
                    turn = (turn + 1) % len(ordered)
                result[ordered[turn].member_id].append((topic, partition))
                turn = (turn + 1) % len(ordered)
        return result


ASSIGNORS: dict[str, type[RangeAssignor] | type[RoundRobinAssignor]] = {
    c.name: c for c in (RangeAssignor, RoundRobinAssignor)}

# The class names Java's consumer accepts for the same strategies.
_JAVA_NAMES = {f"org.apache.kafka.clients.consumer.{c.__name__}": name
               for name, c in ASSIGNORS.items()}


def assignor_names(value: str | Iterable[str]) -> list[str]:
    """The strategy names in a ``partition.assignment.strategy`` value, in order.

    ValueError names any strategy this consumer does not implement.
    """
    items = value.split(",") if isinstance(value, str) else list(value)
    names: list[str] = []
    for item in (str(i).strip() for i in items):
        if not item:
            continue
        name = _JAVA_NAMES.get(item, item.lower())
        if name not in ASSIGNORS:
            raise ValueError(f"unsupported assignment strategy {item!r} (supported: "
                             f"{', '.join(ASSIGNORS)})")
        if name not in names:
            names.append(name)
    if not names:
        raise ValueError("at least one assignment strategy is needed")
    return names


def make_assignors(names: Iterable[str]) -> list[Assignor]:
    return [ASSIGNORS[name]() for name in names]
