"""The classic group membership requests: JoinGroup (dynamic and static members),
SyncGroup, Heartbeat and LeaveGroup (Kafka's GroupCoordinator, pre-KIP-848). Pure: time is
an argument, and what must happen outside (replies to parked requests, log writes) comes
back as `Effects`; the rebalance phases themselves are `broker.group.rebalance`.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, replace
from typing import Callable

from broker.group.model import (
    Effects,
    Group,
    GroupCoordinatorSettings,
    ClassicGroupState,
    GroupWrite,
    Member,
    Reply,
)
from broker.group.rebalance import Rebalancer
from broker.group.records import GroupKey
from broker.group.responses import (
    Outcome,
    current_generation,
    join_body,
    join_error,
    parked_error_replies,
    store_error,
    sync_body,
)
from clients.protocol import ErrorCode
from clients.protocol.messages.heartbeat import HeartbeatRequestData
from clients.protocol.messages.join_group import JoinGroupRequestData
from clients.protocol.messages.sync_group import SyncGroupRequestData

logger = logging.getLogger(__name__)

S = ClassicGroupState


class Membership:
    """Join/sync/heartbeat/leave over `groups` (shared with the offset operations)."""

    def __init__(self, groups: dict[str, Group], settings: GroupCoordinatorSettings,
                 partition_for: Callable[[str], int],
                 new_member_id: Callable[[str], str] | None = None) -> None:
        self.groups = groups
        self.settings = settings
        self.partition_for = partition_for
        self.rebalance = Rebalancer(settings)
        self._new_member_id = new_member_id or (lambda client_id: f"{client_id}-{uuid.uuid4()}")

    # -- JoinGroup -----------------------------------------------------------------------

    def join(self, request: JoinGroupRequestData, *, client_id: str, client_host: str,
             require_known_member_id: bool, now_ms: int) -> tuple[Outcome, Effects]:
        """JoinGroup; `require_known_member_id` is true from v4 (MEMBER_ID_REQUIRED)."""
        group_id = request.group_id
        member_id = request.member_id
        session_timeout = request.session_timeout_ms
        rebalance_timeout = request.rebalance_timeout_ms
        if rebalance_timeout < 0:  # v0 has none: Kafka uses the session timeout
            rebalance_timeout = session_timeout
        join = _Join(member_id, request.group_instance_id, client_id, client_host,
                     rebalance_timeout, session_timeout, request.protocol_type,
                     [(p.name, bytes(p.metadata)) for p in request.protocols])
        if not group_id:
            return join_error(ErrorCode.INVALID_GROUP_ID, member_id)
        if not (self.settings.min_session_timeout_ms <= session_timeout
                <= self.settings.max_session_timeout_ms):
            return join_error(ErrorCode.INVALID_SESSION_TIMEOUT, member_id)
        group = self.groups.get(group_id)
        if group is None:
            if member_id:
                return join_error(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
            group = Group(group_id, self.partition_for(group_id), state_timestamp=now_ms)
            self.groups[group_id] = group
        known = (member_id in group.members or member_id in group.pending_members
                 or group.static_member_id(join.instance_id) is not None)
        if not known and len(group.members) >= self.settings.max_size:
            return join_error(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id)
        if group.state is S.DEAD:
            # Another request just removed it: the member should find the coordinator again.
            return join_error(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id)
        if not group.supports_protocols(join.protocol_type, [n for n, _ in join.protocols]):
            return join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
        if not member_id:
            return self._join_new(group, join, require_known_member_id, now_ms)
        return self._join_existing(group, join, now_ms)

    def _join_new(self, group: Group, join: "_Join", require_known_member_id: bool,
                  now_ms: int) -> tuple[Outcome, Effects]:
        member_id = self._new_member_id(join.client_id)
        if join.instance_id is not None:
            return self._join_static(group, member_id, join, now_ms)
        if require_known_member_id:
            group.pending_members[member_id] = now_ms + join.session_timeout
            return Outcome(body=join_body(ErrorCode.MEMBER_ID_REQUIRED, member_id)), Effects()
        return self._add_and_rebalance(group, member_id, join, now_ms)

    def _join_existing(self, group: Group, join: "_Join", now_ms: int
                       ) -> tuple[Outcome, Effects]:
        member_id = join.member_id
        if member_id in group.pending_members:
            del group.pending_members[member_id]
            return self._add_and_rebalance(group, member_id, join, now_ms)
        code = validate_member(group, member_id, join.instance_id)
        if code:
            return join_error(code, member_id)
        member = group.members[member_id]
        if group.state is S.PREPARING_REBALANCE:
            return self._update_and_rebalance(group, member, join, now_ms)
        if group.state is S.COMPLETING_REBALANCE:
            if member.matches(join.protocols):
                # A retried join: the member lost our answer; repeat it.
                return Outcome(body=current_generation(
                    group, member_id, with_members=group.is_leader(member_id))), Effects()
            return self._update_and_rebalance(group, member, join, now_ms)
        if group.state is S.STABLE:
            if group.is_leader(member_id) or not member.matches(join.protocols):
                return self._update_and_rebalance(group, member, join, now_ms)
            return Outcome(body=current_generation(group, member_id, with_members=False)), Effects()
        return join_error(ErrorCode.UNKNOWN_MEMBER_ID, member_id)

    def _join_static(self, group: Group, member_id: str, join: "_Join", now_ms: int
                     ) -> tuple[Outcome, Effects]:
        old_id = group.static_member_id(join.instance_id)
        if old_id is None:
            return self._add_and_rebalance(group, member_id, join, now_ms)
        effects = Effects()
        old = group.members[old_id]
        # The new incarnation fences the old one (Kafka's replaceStaticMember).
        effects.replies.extend(parked_error_replies(group.group_id, old,
                                                    ErrorCode.FENCED_INSTANCE_ID))
        _rename_member(group, old_id, member_id)
        member = group.members[member_id]
        member.client_id, member.client_host = join.client_id, join.client_host
        if group.state is not S.STABLE:
            outcome, more = self._update_and_rebalance(group, member, join, now_ms)
            return outcome, effects.extend(more)
        previous_protocols = member.protocols
        member.protocols = join.protocols
        if group.select_protocol() != group.protocol_name:
            member.protocols = previous_protocols
            outcome, more = self._update_and_rebalance(group, member, join, now_ms)
            return outcome, effects.extend(more)
        member.heartbeat_deadline = now_ms + member.session_timeout_ms
        generation = group.generation

        def persisted(code: int) -> Effects:
            if code:
                if group.generation == generation and member_id in group.members:
                    _rename_member(group, member_id, old_id)
                return Effects([Reply(group.group_id, member_id, "join",
                                      join_body(store_error(code), member_id))])
            leader = group.is_leader(member_id)
            return Effects([Reply(group.group_id, member_id, "join", current_generation(
                group, member_id, with_members=leader, skip_assignment=leader))])

        effects.writes.append(GroupWrite(group.partition, [group.metadata_entry()], persisted))
        return Outcome(parked=member_id), effects

    def _add_and_rebalance(self, group: Group, member_id: str, join: "_Join", now_ms: int
                           ) -> tuple[Outcome, Effects]:
        member = Member(member_id, join.instance_id, join.client_id, join.client_host,
                        join.rebalance_timeout, join.session_timeout, join.protocol_type,
                        join.protocols, awaiting_join=True, is_new=True,
                        join_deadline=now_ms + self.settings.new_member_join_timeout_ms)
        group.add(member)
        if group.initial_delay_remaining_ms is not None:
            group.new_member_added = True
        effects = self.rebalance.maybe_prepare(group, now_ms)
        effects.extend(self.rebalance.maybe_complete_join(group, now_ms))
        return Outcome(parked=member_id), effects

    def _update_and_rebalance(self, group: Group, member: Member, join: "_Join", now_ms: int
                              ) -> tuple[Outcome, Effects]:
        member.protocols = join.protocols
        member.rebalance_timeout_ms = join.rebalance_timeout
        member.session_timeout_ms = join.session_timeout
        member.awaiting_join = True
        effects = self.rebalance.maybe_prepare(group, now_ms)
        effects.extend(self.rebalance.maybe_complete_join(group, now_ms))
        return Outcome(parked=member.member_id), effects

    # -- SyncGroup -----------------------------------------------------------------------

    def sync(self, request: SyncGroupRequestData, now_ms: int) -> tuple[Outcome, Effects]:
        """SyncGroup: the leader's assignment is written to the log before anyone gets theirs."""
        member_id = request.member_id
        group = self.groups.get(request.group_id)

        def error(code: int) -> tuple[Outcome, Effects]:
            return Outcome(body=sync_body(code)), Effects()

        if group is None:
            return error(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.state is S.DEAD:
            return error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        code = validate_member(group, member_id, request.group_instance_id)
        if code:
            return error(code)
        if request.generation_id != group.generation:
            return error(ErrorCode.ILLEGAL_GENERATION)
        protocol_type, protocol_name = request.protocol_type, request.protocol_name
        if ((protocol_type is not None and protocol_type != group.protocol_type)
                or (protocol_name is not None and protocol_name != group.protocol_name)):
            return error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group.state is S.EMPTY:
            return error(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.state is S.PREPARING_REBALANCE:
            return error(ErrorCode.REBALANCE_IN_PROGRESS)
        member = group.members[member_id]
        member.heartbeat_deadline = now_ms + member.session_timeout_ms
        self._synced(group, member_id)
        if group.state is S.STABLE:
            return Outcome(body=sync_body(ErrorCode.NONE, member.assignment, group.protocol_type,
                                          group.protocol_name)), Effects()
        member.awaiting_sync = True
        effects = Effects()
        if group.is_leader(member_id):
            assignments = {a.member_id: bytes(a.assignment) for a in request.assignments}
            effects.writes.append(self._store_assignment(group, assignments, now_ms))
        return Outcome(parked=member_id), effects

    def _synced(self, group: Group, member_id: str) -> None:
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            group.sync_deadline = None

    def _store_assignment(self, group: Group, assignments: dict[str, bytes], now_ms: int
                          ) -> GroupWrite:
        generation = group.generation
        value = group.to_value()
        stored = replace(value, members=tuple(
            replace(m, assignment=assignments.get(m.member_id, b"")) for m in value.members))

        def stored_then(code: int) -> Effects:
            if group.state is not S.COMPLETING_REBALANCE or group.generation != generation:
                return Effects()
            if code:
                logger.warning("group %s: storing generation %d failed with error %d",
                               group.group_id, generation, code)
                effects = self.rebalance.reset_assignment(group, store_error(code))
                return effects.extend(self.rebalance.maybe_prepare(group, now_ms))
            effects = self.rebalance.set_assignment(group, assignments, now_ms)
            group.transition(S.STABLE, now_ms)
            logger.info("group %s: generation %d is stable", group.group_id, generation)
            return effects

        return GroupWrite(group.partition, [(GroupKey(group.group_id), stored)], stored_then)

    # -- Heartbeat and LeaveGroup --------------------------------------------------------

    def heartbeat(self, request: HeartbeatRequestData, now_ms: int) -> int:
        """Heartbeat's error code; a good heartbeat pushes the session deadline out."""
        group = self.groups.get(request.group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.state is S.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        member_id = request.member_id
        code = validate_member(group, member_id, request.group_instance_id)
        if code:
            return code
        if request.generation_id != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        if group.state is S.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        member = group.members[member_id]
        member.heartbeat_deadline = now_ms + member.session_timeout_ms
        if group.state is S.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def touch(self, group: Group, member_id: str, now_ms: int) -> None:
        """An offset commit from a member counts as its heartbeat."""
        member = group.members.get(member_id)
        if member is not None:
            member.heartbeat_deadline = now_ms + member.session_timeout_ms

    def leave(self, group_id: str, leaving: list[tuple[str, str | None]], now_ms: int
              ) -> tuple[int, list[int], Effects]:
        """LeaveGroup of (member_id, group_instance_id) pairs: the top-level code, one code
        per member, and the effects."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID] * len(leaving), Effects()
        if group.state is S.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, [], Effects()
        codes: list[int] = []
        effects = Effects()
        for member_id, instance_id in leaving:
            if not member_id and instance_id is not None:
                member_id = group.static_member_id(instance_id) or ""
                if not member_id:
                    codes.append(ErrorCode.UNKNOWN_MEMBER_ID)
                    continue
            if member_id in group.pending_members:
                del group.pending_members[member_id]
                effects.extend(self.rebalance.maybe_complete_join(group, now_ms))
                codes.append(ErrorCode.NONE)
                continue
            code = validate_member(group, member_id, instance_id)
            codes.append(code)
            if not code:
                logger.info("group %s: member %s left", group_id, member_id)
                effects.extend(self.rebalance.remove_member(group, member_id, now_ms))
        return ErrorCode.NONE, codes, effects


@dataclass(frozen=True)
class _Join:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]


def validate_member(group: Group, member_id: str, instance_id: str | None) -> int:
    """Kafka's validateCurrentMember: FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID or NONE."""
    static_id = group.static_member_id(instance_id)
    if static_id is not None and static_id != member_id:
        return ErrorCode.FENCED_INSTANCE_ID
    if member_id not in group.members:
        return ErrorCode.UNKNOWN_MEMBER_ID
    return ErrorCode.NONE


def _rename_member(group: Group, old_id: str, new_id: str) -> None:
    member = group.members.pop(old_id)
    member.member_id = new_id
    member.awaiting_join = member.awaiting_sync = False
    group.members[new_id] = member
    if member.group_instance_id is not None:
        group.static_members[member.group_instance_id] = new_id
    if group.leader_id == old_id:
        group.leader_id = new_id
    if old_id in group.pending_sync:
        group.pending_sync.discard(old_id)
        group.pending_sync.add(new_id)
