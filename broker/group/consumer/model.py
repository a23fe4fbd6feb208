"""Consumer-type groups (KIP-848): members, epochs and assignments. Pure data, no I/O.

An assignment maps a topic id to a set of partition ids. The group epoch counts changes of
membership, subscriptions and subscribed topics' metadata; the target assignment is computed
for a group epoch (the assignment epoch); each member then moves towards its target one
member epoch at a time, revoking before it is given what another member still holds.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field, replace

Assignment = dict[uuid.UUID, frozenset[int]]
# Subscribed topics that exist: name -> (topic id, partition count).
TopicMetadata = dict[str, tuple[uuid.UUID, int]]

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
CONSUMER_GROUP_PROTOCOL_TYPE = "consumer"


class ConsumerGroupState(enum.Enum):
    """Kafka's consumer group states; the value is the name Kafka reports."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class MemberState(enum.Enum):
    """Where a member is in its reconciliation towards the target assignment."""

    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


def without_empty(assignment: Assignment) -> Assignment:
    return {topic: parts for topic, parts in assignment.items() if parts}


def partition_count(assignment: Assignment) -> int:
    return sum(len(parts) for parts in assignment.values())


@dataclass
class ConsumerMember:
    """One member of a consumer group, as the coordinator tracks it."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    session_deadline: int = 0
    # Set while the member must revoke partitions: it is fenced if it has not by then.
    rebalance_deadline: int | None = None

    def copy(self, **changes: object) -> "ConsumerMember":
        return replace(self, **changes)  # type: ignore[arg-type]

    def subscription(self) -> tuple[tuple[str, ...], str | None]:
        return self.subscribed_topic_names, self.subscribed_topic_regex

    def is_reconciled_to(self, assignment_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == assignment_epoch


@dataclass
class ConsumerGroup:
    """A consumer group hosted by this coordinator (its offsets partition is `partition`)."""

    group_id: str
    partition: int
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    subscription_metadata: TopicMetadata = field(default_factory=dict)
    assignor_name: str = ""

    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def static_member(self, instance_id: str | None) -> ConsumerMember | None:
        member_id = None if instance_id is None else self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def put(self, member: ConsumerMember) -> None:
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove(self, member_id: str) -> ConsumerMember | None:
        member = self.members.pop(member_id, None)
        self.target.pop(member_id, None)
        if member is not None and member.instance_id is not None:
            if self.static_members.get(member.instance_id) == member_id:
                del self.static_members[member.instance_id]
        return member

    def owners(self) -> dict[tuple[uuid.UUID, int], str]:
        """Who holds each partition now: assigned, or assigned before and not yet revoked."""
        held: dict[tuple[uuid.UUID, int], str] = {}
        for member in self.members.values():
            for assignment in (member.assigned, member.pending_revocation):
                for topic, parts in assignment.items():
                    for p in parts:
                        held[(topic, p)] = member.member_id
        return held
