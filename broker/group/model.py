"""Group state: members, generations and committed offsets, plus what an operation asks the
runtime to do (replies to parked requests, log writes). Pure data and small rules; no I/O.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Union

from broker.group.records import GroupKey, GroupValue, MemberValue, OffsetValue
from clients.protocol.messages.join_group import JoinGroupResponseData
from clients.protocol.messages.sync_group import SyncGroupResponseData

if TYPE_CHECKING:
    from broker.config import ServerConfig

INT_MAX = 2**31 - 1
NO_GENERATION = -1
# Kafka's GroupCoordinator.NewMemberJoinTimeoutMs: how long a brand-new member may take to
# complete its first join before it is dropped.
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000
CONSUMER_PROTOCOL_TYPE = "consumer"
# The answer to a JoinGroup or a SyncGroup, at the latest version.
MembershipReply = Union[JoinGroupResponseData, SyncGroupResponseData]


class ClassicGroupState(enum.Enum):
    """Kafka's classic group states; the value is the name Kafka reports."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


# Kafka's GroupMetadata.validPreviousStates.
VALID_PREVIOUS_STATES: dict[ClassicGroupState, frozenset[ClassicGroupState]] = {
    ClassicGroupState.DEAD: frozenset(ClassicGroupState),
    ClassicGroupState.COMPLETING_REBALANCE: frozenset({ClassicGroupState.PREPARING_REBALANCE}),
    ClassicGroupState.STABLE: frozenset({ClassicGroupState.COMPLETING_REBALANCE}),
    ClassicGroupState.PREPARING_REBALANCE: frozenset({ClassicGroupState.STABLE,
                                                      ClassicGroupState.COMPLETING_REBALANCE,
                                                      ClassicGroupState.EMPTY}),
    ClassicGroupState.EMPTY: frozenset({ClassicGroupState.PREPARING_REBALANCE}),
}


class IllegalStateTransition(RuntimeError):
    """A transition Kafka's group state machine does not allow (a coordinator bug)."""


@dataclass(frozen=True)
class GroupCoordinatorSettings:
    """The broker settings the coordinator applies (Kafka's names in `from_config`)."""

    num_partitions: int = 50
    initial_rebalance_delay_ms: int = 3000
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    max_size: int = INT_MAX
    offset_metadata_max_bytes: int = 4096
    offsets_retention_ms: int = 10080 * 60_000
    offsets_retention_check_interval_ms: int = 600_000
    new_member_join_timeout_ms: int = NEW_MEMBER_JOIN_TIMEOUT_MS

    @classmethod
    def from_config(cls, config: "ServerConfig") -> "GroupCoordinatorSettings":
        return cls(num_partitions=config.offsets_topic_num_partitions,
                   initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
                   min_session_timeout_ms=config.group_min_session_timeout_ms,
                   max_session_timeout_ms=config.group_max_session_timeout_ms,
                   max_size=config.group_max_size,
                   offset_metadata_max_bytes=config.offset_metadata_max_bytes,
                   offsets_retention_ms=config.offsets_retention_minutes * 60_000,
                   offsets_retention_check_interval_ms=(
                       config.offsets_retention_check_interval_ms))


@dataclass
class Member:
    """One member of a group as the coordinator tracks it."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    awaiting_join: bool = False
    awaiting_sync: bool = False
    is_new: bool = False
    heartbeat_deadline: int = 0
    join_deadline: int = 0

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata_for(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """Same protocols, same order, same metadata (Kafka's MemberMetadata.matches)."""
        return [(n, bytes(m)) for n, m in protocols] == [(n, bytes(m)) for n, m in self.protocols]

    def vote(self, candidates: set[str]) -> str:
        """This member's most preferred protocol among `candidates`."""
        return next(name for name in self.protocol_names() if name in candidates)

    def to_value(self, protocol: str | None) -> MemberValue:
        return MemberValue(self.member_id, self.group_instance_id, self.client_id,
                           self.client_host, self.rebalance_timeout_ms, self.session_timeout_ms,
                           self.metadata_for(protocol), self.assignment)


@dataclass
class Group:
    """A group hosted by this coordinator (its `__consumer_offsets` partition is `partition`)."""

    group_id: str
    partition: int
    state: ClassicGroupState = ClassicGroupState.EMPTY
    state_timestamp: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation: int = 0
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    # Member ids handed out with MEMBER_ID_REQUIRED, by the deadline to come back with them.
    pending_members: dict[str, int] = field(default_factory=dict)
    # The join phase ends at this deadline (rebalance timeout or the initial delay).
    join_deadline: int | None = None
    # While the initial delay runs: how much of the rebalance timeout is left to extend it.
    initial_delay_remaining_ms: int | None = None
    new_member_added: bool = False
    # Members of this generation that have not sent SyncGroup, and until when they may.
    pending_sync: set[str] = field(default_factory=set)
    sync_deadline: int | None = None
    offsets: dict[tuple[str, int], OffsetValue] = field(default_factory=dict)
    # Offsets being written (not yet visible to OffsetFetch, never expired meanwhile).
    pending_offset_commits: dict[tuple[str, int], int] = field(default_factory=dict)
    # Transactional offset commits written but not yet ended, by producer id: they become
    # `offsets` when the producer's COMMIT marker arrives and vanish on ABORT.
    pending_txn_offsets: dict[int, dict[tuple[str, int], OffsetValue]] = field(
        default_factory=dict)

    def has_pending_txn_offset(self, tp: tuple[str, int]) -> bool:
        return any(tp in pending for pending in self.pending_txn_offsets.values())

    def transition(self, state: ClassicGroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise IllegalStateTransition(
                f"group {self.group_id}: {self.state.value} -> {state.value} is not allowed")
        self.state = state
        self.state_timestamp = now_ms

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def elect_joined_leader(self) -> bool:
        """Kafka's maybeElectNewJoinedLeader: at the end of a join phase the leader must be a
        member that rejoined, since only a parked JoinGroup can carry the member list. Keeps a
        leader that rejoined, else hands the leadership to the first member that did; False
        when no member rejoined."""
        leader = self.members.get(self.leader_id) if self.leader_id is not None else None
        if leader is not None and leader.awaiting_join:
            return True
        joined = next((m for m in self.members.values() if m.awaiting_join), None)
        if joined is None:
            return False
        self.leader_id = joined.member_id
        return True

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def candidate_protocols(self) -> set[str]:
        """Protocols every member supports."""
        members = list(self.members.values())
        if not members:
            return set()
        common = set(members[0].protocol_names())
        for member in members[1:]:
            common &= set(member.protocol_names())
        return common

    def supports_protocols(self, protocol_type: str, protocols: list[str]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        return protocol_type == self.protocol_type and bool(
            self.candidate_protocols() & set(protocols))

    def select_protocol(self) -> str:
        """Kafka's vote: each member votes for its first candidate; most votes wins (ties go
        to the protocol voted first, so the outcome is deterministic)."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])

    def all_members_joined(self) -> bool:
        return (all(m.awaiting_join for m in self.members.values())
                and not self.pending_members)

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def to_value(self) -> GroupValue:
        """The group-metadata record value of the current generation."""
        return GroupValue(self.protocol_type or "", self.generation, self.protocol_name,
                          self.leader_id, self.state_timestamp,
                          tuple(m.to_value(self.protocol_name) for m in self.members.values()))

    def metadata_entry(self) -> tuple[GroupKey, GroupValue]:
        return GroupKey(self.group_id), self.to_value()


@dataclass(frozen=True)
class Reply:
    """A response for a parked JoinGroup (`kind` "join") or SyncGroup ("sync")."""

    group_id: str
    member_id: str
    kind: str
    body: MembershipReply


@dataclass
class GroupWrite:
    """Records to append to `partition`; `then(error_code)` runs once the append is
    committed (0) or failed, and returns the effects that follow."""

    partition: int
    entries: list[tuple[Any, Any]]
    then: Callable[[int], "Effects"] | None = None
    # (producer id, epoch) of a transactional offset commit: the batch is written as part
    # of that producer's transaction.
    producer: tuple[int, int] | None = None
    # False when `then` changes no group's deadlines (offset commits): its empty effects
    # need not wake the coordinator's timer, which would look at every group again.
    reschedules: bool = True


@dataclass
class Effects:
    """What an operation asks of the runtime. Replies do not depend on the writes beside
    them (they go out at once); whatever must follow a write is in that write's `then`."""

    replies: list[Reply] = field(default_factory=list)
    writes: list[GroupWrite] = field(default_factory=list)

    def extend(self, other: "Effects") -> "Effects":
        self.replies.extend(other.replies)
        self.writes.extend(other.writes)
        return self
