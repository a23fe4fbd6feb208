"""The coordinator's whole in-memory state, I/O-free: every group of the `__consumer_offsets`
partitions this broker leads, loading them from their records and answering the group APIs.
The runtime (`broker.group.coordinator`) supplies time, performs the writes and delivers
the replies it returns.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from broker.group.membership import Membership
from broker.group.model import (ClassicGroupState, Effects, Group, GroupCoordinatorSettings,
                                GroupWrite, Member)
from broker.group.offsets import CommitResult, commit_offsets, delete_group, expire_offsets
from broker.group.txn_offsets import commit_txn_offsets, complete_txn_offsets
from broker.group.offsets import (FetchedTopic, RequestedTopic, TopicPartition, delete_offsets,
                                  fetch_offsets)
from broker.group.records import (ConsumerGroupKey, ConsumerGroupValue, GroupKey, GroupValue,
                                  OffsetKey, OffsetValue, RecordKey)
from broker.group.records import OffsetsTxnMarker
from broker.group.responses import Outcome, parked_error_replies
from broker.group.routing import partition_for_group
from clients.protocol import ErrorCode
from clients.protocol.messages.describe_groups import DescribeGroupsResponseData
from clients.protocol.messages.heartbeat import HeartbeatRequestData
from clients.protocol.messages.join_group import JoinGroupRequestData
from clients.protocol.messages.list_groups import ListGroupsResponseData
from clients.protocol.messages.offset_commit import OffsetCommitRequestData
from clients.protocol.messages.sync_group import SyncGroupRequestData
from clients.protocol.messages.txn_offset_commit import TxnOffsetCommitRequestData

DescribedGroup = DescribeGroupsResponseData.DescribedGroup
DescribedMember = DescribeGroupsResponseData.DescribedGroupMember
ListedGroup = ListGroupsResponseData.ListedGroup

LoadedEntry = tuple[int, RecordKey, Any]


class GroupEngine:
    """Groups by id, across the partitions this coordinator has loaded."""

    def __init__(self, settings: GroupCoordinatorSettings,
                 new_member_id: Callable[[str], str] | None = None) -> None:
        self.settings = settings
        self.groups: dict[str, Group] = {}
        # Consumer-type groups (KIP-848) found by loads, by id: (partition, stored state),
        # until the consumer group manager adopts them.
        self.loaded_consumer_groups: dict[str, tuple[int, ConsumerGroupValue]] = {}
        # Ids of the consumer-type groups with members (their manager sets this).
        self.active_consumer_groups: Callable[[], set[str]] = set
        self.membership = Membership(self.groups, settings, self.partition_for, new_member_id)

    def partition_for(self, group_id: str) -> int:
        return partition_for_group(group_id, self.settings.num_partitions)

    # -- membership ----------------------------------------------------------------------

    def join(self, request: JoinGroupRequestData, *, client_id: str, client_host: str,
             require_known_member_id: bool, now_ms: int) -> tuple[Outcome, Effects]:
        return self.membership.join(request, client_id=client_id, client_host=client_host,
                                    require_known_member_id=require_known_member_id,
                                    now_ms=now_ms)

    def sync(self, request: SyncGroupRequestData, now_ms: int) -> tuple[Outcome, Effects]:
        return self.membership.sync(request, now_ms)

    def heartbeat(self, request: HeartbeatRequestData, now_ms: int) -> int:
        return self.membership.heartbeat(request, now_ms)

    def leave(self, group_id: str, leaving: list[tuple[str, str | None]], now_ms: int
              ) -> tuple[int, list[int], Effects]:
        return self.membership.leave(group_id, leaving, now_ms)

    # -- offsets -------------------------------------------------------------------------

    def commit(self, request: OffsetCommitRequestData, now_ms: int,
               topic_exists: Callable[[str], bool] | None = None) -> CommitResult:
        return commit_offsets(self.groups, request, now_ms, partition_for=self.partition_for,
                              metadata_max_bytes=self.settings.offset_metadata_max_bytes,
                              topic_exists=topic_exists, touch=self.membership.touch)

    def commit_txn(self, request: TxnOffsetCommitRequestData, now_ms: int,
                   topic_exists: Callable[[str], bool] | None = None) -> CommitResult:
        return commit_txn_offsets(self.groups, request, now_ms,
                                  partition_for=self.partition_for,
                                  metadata_max_bytes=self.settings.offset_metadata_max_bytes,
                                  topic_exists=topic_exists)

    def complete_txn(self, partition: int, producer_id: int, committed: bool) -> int:
        return complete_txn_offsets(self.groups, partition, producer_id, committed)

    def fetch(self, group_id: str, topics: Sequence[RequestedTopic] | None,
              require_stable: bool = False) -> list[FetchedTopic]:
        return fetch_offsets(self.groups.get(group_id), topics, require_stable)

    def expire_offsets(self, now_ms: int) -> Effects:
        """Expired offsets and empty groups removed; a consumer-type group with members
        keeps its offsets (Kafka keeps those of the topics its members subscribe to)."""
        active = self.active_consumer_groups()
        if not active:
            return expire_offsets(self.groups, now_ms, self.settings.offsets_retention_ms)
        expiring = {g: group for g, group in self.groups.items() if g not in active}
        effects = expire_offsets(expiring, now_ms, self.settings.offsets_retention_ms)
        for group_id in [g for g in self.groups if g not in active and g not in expiring]:
            del self.groups[group_id]
        return effects

    def delete(self, group_id: str, now_ms: int) -> tuple[int, GroupWrite | None]:
        return delete_group(self.groups, group_id, now_ms)

    def delete_offsets(self, group_id: str, partitions: list[TopicPartition]
                       ) -> tuple[int, dict[TopicPartition, int], GroupWrite | None]:
        return delete_offsets(self.groups, group_id, partitions)

    # -- deadlines -----------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        """The earliest time `tick` has something to do (None: nothing scheduled)."""
        deadlines = [d for g in self.groups.values()
                     if (d := self.membership.rebalance.next_deadline(g)) is not None]
        return min(deadlines, default=None)

    def tick(self, now_ms: int) -> Effects:
        """Everything due by `now_ms`: session expiry, ends of join and sync phases."""
        effects = Effects()
        for group in list(self.groups.values()):
            effects.extend(self.membership.rebalance.expire(group, now_ms))
        return effects

    # -- views ---------------------------------------------------------------------------

    def describe(self, group_id: str) -> DescribedGroup:
        """One DescribeGroups entry (Kafka's summary: metadata and assignments only when
        Stable; an unknown group is reported Dead)."""
        group = self.groups.get(group_id)
        if group is None:
            return DescribedGroup(group_id=group_id, group_state=ClassicGroupState.DEAD.value)
        stable = group.state is ClassicGroupState.STABLE
        return DescribedGroup(
            group_id=group_id, group_state=group.state.value,
            protocol_type=group.protocol_type or "",
            protocol_data=(group.protocol_name or "") if stable else "",
            members=[DescribedMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id,
                client_id=m.client_id, client_host=m.client_host,
                member_metadata=m.metadata_for(group.protocol_name) if stable else b"",
                member_assignment=m.assignment if stable else b"")
                for m in group.members.values()])

    def list_groups(self, states: Iterable[str] = ()) -> list[ListedGroup]:
        """ListGroups entries, filtered by state names (case-insensitive) when given."""
        wanted = {s.lower() for s in states}
        return [ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type or "",
                            group_state=g.state.value)
                for g in self.groups.values()
                if g.state is not ClassicGroupState.DEAD
                and (not wanted or g.state.value.lower() in wanted)]

    # -- loading and unloading -----------------------------------------------------------

    def load(self, partition: int, entries: Iterable[LoadedEntry], now_ms: int) -> int:
        """Replay one partition's records (in log order); returns how many groups it holds."""
        replay = PartitionReplay()
        replay.apply(entries)
        return self.install(partition, replay, now_ms)

    def install(self, partition: int, replay: PartitionReplay, now_ms: int) -> int:
        """Host the groups a finished replay of `partition` found; how many there are."""
        loaded = 0
        pending_by_group: dict[str, dict[int, dict[tuple[str, int], OffsetValue]]] = {}
        for producer_id, by_group in replay.pending_txn.items():
            for group_id, offsets in by_group.items():
                pending_by_group.setdefault(group_id, {})[producer_id] = dict(offsets)
        for group_id in dict.fromkeys([*replay.metadata, *replay.offsets, *pending_by_group]):
            value = replay.metadata.get(group_id)
            committed = replay.offsets.get(group_id) or {}
            pending = pending_by_group.get(group_id) or {}
            if value is None and not committed and not pending:
                continue
            group = _group_from_value(group_id, partition, value, now_ms)
            group.offsets = dict(committed)
            group.pending_txn_offsets = pending
            self.groups[group_id] = group
            loaded += 1
        for group_id, stored in replay.consumer_groups.items():
            if stored is not None:
                self.loaded_consumer_groups[group_id] = (partition, stored)
                loaded += 1
        return loaded

    def unload(self, partition: int) -> Effects:
        """Forget the partition's groups; parked requests learn NOT_COORDINATOR."""
        effects = Effects()
        for group in [g for g in self.groups.values() if g.partition == partition]:
            for member in group.members.values():
                effects.replies.extend(parked_error_replies(group.group_id, member,
                                                            ErrorCode.NOT_COORDINATOR))
            del self.groups[group.group_id]
        for group_id in [g for g, (p, _) in self.loaded_consumer_groups.items()
                         if p == partition]:
            del self.loaded_consumer_groups[group_id]
        return effects


class PartitionReplay:
    """One partition's records replayed in log order, a slice at a time: the latest group
    metadata and offsets of every group, so memory follows the live keys, not the log.
    Transactional offset commits wait under their producer id until its marker: a COMMIT
    applies them, an ABORT drops them, and those still open at the end stay pending."""

    def __init__(self) -> None:
        self.metadata: dict[str, GroupValue | None] = {}
        self.offsets: dict[str, dict[tuple[str, int], OffsetValue]] = {}
        self.pending_txn: dict[int, dict[str, dict[tuple[str, int], OffsetValue]]] = {}
        self.consumer_groups: dict[str, ConsumerGroupValue | None] = {}
        self.records = 0

    def apply(self, entries: Iterable[Any]) -> None:
        for item in entries:
            if isinstance(item, OffsetsTxnMarker):
                self._end_txn(item)
                continue
            key, value = item[1], item[2]
            producer_id = item[3] if len(item) > 3 else -1
            self.records += 1
            if producer_id >= 0 and isinstance(key, OffsetKey):
                if value is not None:
                    self.pending_txn.setdefault(producer_id, {}).setdefault(
                        key.group, {})[(key.topic, key.partition)] = value
                continue
            if isinstance(key, OffsetKey):
                committed = self.offsets.setdefault(key.group, {})
                if value is None:
                    committed.pop((key.topic, key.partition), None)
                else:
                    committed[(key.topic, key.partition)] = value
            elif isinstance(key, GroupKey):
                self.metadata[key.group] = value
            elif isinstance(key, ConsumerGroupKey):
                self.consumer_groups[key.group] = value

    def _end_txn(self, marker: OffsetsTxnMarker) -> None:
        pending = self.pending_txn.pop(marker.producer_id, None)
        if not pending or not marker.committed:
            return
        for group_id, offsets in pending.items():
            self.offsets.setdefault(group_id, {}).update(offsets)


def _group_from_value(group_id: str, partition: int, value: GroupValue | None,
                      now_ms: int) -> Group:
    group = Group(group_id, partition, state_timestamp=now_ms)
    if value is None:
        return group
    group.protocol_type = value.protocol_type or None
    group.generation = value.generation
    group.protocol_name = value.protocol
    group.state_timestamp = value.current_state_timestamp
    for m in value.members:
        group.add(Member(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                         m.rebalance_timeout, m.session_timeout, group.protocol_type or "",
                         [(value.protocol or "", m.subscription)], assignment=m.assignment,
                         heartbeat_deadline=now_ms + m.session_timeout))
    group.leader_id = value.leader if value.leader in group.members else group.leader_id
    group.state = ClassicGroupState.STABLE if group.members else ClassicGroupState.EMPTY
    return group
