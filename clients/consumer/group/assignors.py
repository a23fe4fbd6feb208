"""Kafka's partition assignors, run by the group leader: ``range`` and ``roundrobin``
(eager), ``sticky`` (eager) and ``cooperative-sticky`` (KIP-429), the last two over the
algorithm in ``sticky``.

Range and round-robin order members as Kafka does: static members (with a ``group.instance.id``) first by
instance id, then dynamic members by member id; so every client computing an assignment
for the same group gets the same answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Protocol, Sequence

import struct

from clients.consumer.group.protocol import (
    TopicPartition,
    decode_sticky_user_data,
    encode_generation_user_data,
    encode_sticky_user_data,
)
from clients.consumer.group.sticky import (
    DEFAULT_GENERATION,
    StickyMember,
    cooperative_adjust,
    sticky_assign,
)
from clients.protocol import ProtocolError


@dataclass(frozen=True)
class MemberSubscription:
    """What the leader knows of one member from its JoinGroup metadata."""

    member_id: str
    topics: tuple[str, ...]
    group_instance_id: str | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = DEFAULT_GENERATION   # from subscription v2 on
    user_data: bytes | None = None


def _member_order(member: MemberSubscription) -> tuple[int, str]:
    if member.group_instance_id is not None:
        return (0, member.group_instance_id)
    return (1, member.member_id)


def sorted_members(members: Iterable[MemberSubscription]) -> list[MemberSubscription]:
    return sorted(members, key=_member_order)


class Assignor(Protocol):
    """An assignor: its ``partition.assignment.strategy`` name and its algorithm."""

    name: str
    # Whether the assignor rebalances incrementally (KIP-429): members keep what they
    # own while joining and give up only the partitions that move.
    cooperative: bool

    def user_data(self, assigned: Sequence[TopicPartition], generation_id: int) -> bytes | None:
        """The subscription's user data, from the member's last assignment."""
        ...

    def assign(self, partition_counts: Mapping[str, int],
               members: Iterable[MemberSubscription]) -> dict[str, list[TopicPartition]]:
        """Partitions per member id; topics missing from ``partition_counts`` are skipped."""
        ...


class _EagerAssignor:
    cooperative = False

    def user_data(self, assigned: Sequence[TopicPartition], generation_id: int) -> bytes | None:
        return None


class RangeAssignor(_EagerAssignor):
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


class RoundRobinAssignor(_EagerAssignor):
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


def _sticky_member_data(data: bytes | None) -> tuple[tuple[TopicPartition, ...], int]:
    """(partitions, generation) from sticky user data; unreadable data counts as none."""
    if not data:
        return (), DEFAULT_GENERATION
    try:
        return decode_sticky_user_data(data)
    except ProtocolError:
        return (), DEFAULT_GENERATION


class StickyAssignor(_EagerAssignor):
    """Kafka's ``sticky`` assignor: balanced, and moving as few partitions as it can.
    Eager, so what a member owned travels in its user data (its previous assignment and
    generation), as Java's StickyAssignor sends it."""

    name = "sticky"

    def user_data(self, assigned: Sequence[TopicPartition], generation_id: int) -> bytes | None:
        return encode_sticky_user_data(assigned, generation_id)

    def assign(self, partition_counts: Mapping[str, int],
               members: Iterable[MemberSubscription]) -> dict[str, list[TopicPartition]]:
        group = []
        for m in members:
            owned, generation = _sticky_member_data(m.user_data)
            group.append(StickyMember(m.member_id, m.topics, owned, generation))
        return sticky_assign(partition_counts, group)


def cooperative_member(m: MemberSubscription) -> StickyMember:
    """A member as the cooperative-sticky assignor reads it: the owned partitions of its
    subscription, and its generation from the subscription (v2+) or else the user data
    (Java's 4-byte generation, or librdkafka's sticky user data)."""
    generation = m.generation_id
    if generation == DEFAULT_GENERATION and m.user_data:
        if len(m.user_data) == 4:
            generation = struct.unpack(">i", m.user_data)[0]
        else:
            generation = _sticky_member_data(m.user_data)[1]
    return StickyMember(m.member_id, m.topics, m.owned_partitions, generation)


class CooperativeStickyAssignor:
    """Kafka's ``cooperative-sticky`` assignor (KIP-429): the sticky assignment, minus
    the partitions another member still owns; they follow in the next rebalance, once
    their owner has revoked them."""

    name = "cooperative-sticky"
    cooperative = True

    def __init__(self, constrained: bool = True) -> None:
        """``constrained``: see :func:`sticky_assign`."""
        self.constrained = constrained

    def user_data(self, assigned: Sequence[TopicPartition], generation_id: int) -> bytes | None:
        return encode_generation_user_data(generation_id)

    def assign(self, partition_counts: Mapping[str, int],
               members: Iterable[MemberSubscription]) -> dict[str, list[TopicPartition]]:
        group = [cooperative_member(m) for m in members]
        full = sticky_assign(partition_counts, group, constrained=self.constrained)
        return cooperative_adjust(full, group)


AssignorClass = (type[RangeAssignor] | type[RoundRobinAssignor] | type[StickyAssignor]
                 | type[CooperativeStickyAssignor])
ASSIGNORS: dict[str, AssignorClass] = {
    c.name: c for c in (RangeAssignor, RoundRobinAssignor, StickyAssignor,
                        CooperativeStickyAssignor)}

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
