"""The classic group membership protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and
the deadlines that drive rebalances (Kafka's GroupCoordinator, pre-KIP-848). Pure: time is
an argument, and what must happen outside (replies to parked requests, log writes) comes
back as `Effects`.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable

from broker.group.model import (
    Effects,
    Group,
    GroupSettings,
    GroupState,
    GroupWrite,
    Member,
    Reply,
)
from broker.group.records import GroupKey
from clients.protocol import ErrorCode

logger = logging.getLogger(__name__)

S = GroupState
REBALANCING_ALLOWED = (S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY)


@dataclass(frozen=True)
class Outcome:
    """A request's own answer: `body` now, or later through a Reply to `parked` (member id)."""

    body: dict[str, Any] | None = None
    parked: str | None = None


def join_body(code: int, member_id: str = "", *, generation: int = -1,
              protocol_type: str | None = None, protocol_name: str | None = None,
              leader: str = "", members: Iterable[dict[str, Any]] = (),
              skip_assignment: bool = False) -> dict[str, Any]:
    """A JoinGroup response body (latest version's field names)."""
    return {"throttle_time_ms": 0, "error_code": int(code), "generation_id": generation,
            "protocol_type": protocol_type, "protocol_name": protocol_name, "leader": leader,
            "skip_assignment": skip_assignment, "member_id": member_id, "members": list(members)}


def sync_body(code: int, assignment: bytes = b"", protocol_type: str | None = None,
              protocol_name: str | None = None) -> dict[str, Any]:
    """A SyncGroup response body."""
    return {"throttle_time_ms": 0, "error_code": int(code), "protocol_type": protocol_type,
            "protocol_name": protocol_name, "assignment": assignment}


def store_error(code: int) -> int:
    """The group error for a failed group-metadata write (Kafka's storeGroup callback)."""
    if code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.COORDINATOR_NOT_AVAILABLE):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR,
                ErrorCode.NOT_COORDINATOR):
        return ErrorCode.NOT_COORDINATOR
    if code == ErrorCode.REQUEST_TIMED_OUT:
        return ErrorCode.REBALANCE_IN_PROGRESS
    return ErrorCode.UNKNOWN_SERVER_ERROR


def _generation_members(group: Group) -> list[dict[str, Any]]:
    return [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
             "metadata": m.metadata_for(group.protocol_name)} for m in group.members.values()]


def _current_generation(group: Group, member_id: str, *, with_members: bool,
                        skip_assignment: bool = False) -> dict[str, Any]:
    return join_body(ErrorCode.NONE, member_id, generation=group.generation,
                     protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                     leader=group.leader_id or "",
                     members=_generation_members(group) if with_members else (),
                     skip_assignment=skip_assignment)


def _error(code: int, member_id: str = "") -> tuple[Outcome, Effects]:
    return Outcome(body=join_body(code, member_id)), Effects()


class Membership:
    """Join/sync/heartbeat/leave over `groups` (shared with the offset operations)."""

    def __init__(self, groups: dict[str, Group], settings: GroupSettings,
                 partition_for: Callable[[str], int],
                 new_member_id: Callable[[str], str] | None = None) -> None:
        self.groups = groups
        self.settings = settings
        self.partition_for = partition_for
        self._new_member_id = new_member_id or (lambda client_id: f"{client_id}-{uuid.uuid4()}")

    # -- JoinGroup -----------------------------------------------------------------------

    def join(self, request: dict[str, Any], *, client_id: str, client_host: str,
             require_known_member_id: bool, now_ms: int) -> tuple[Outcome, Effects]:
        """JoinGroup; `require_known_member_id` is true from v4 (MEMBER_ID_REQUIRED)."""
        group_id = request.get("group_id") or ""
        member_id = request.get("member_id") or ""
        session_timeout = int(request["session_timeout_ms"])
        rebalance_timeout = int(request.get("rebalance_timeout_ms", -1))
        if rebalance_timeout < 0:  # v0 has none: Kafka uses the session timeout
            rebalance_timeout = session_timeout
        join = _Join(member_id, request.get("group_instance_id"), client_id, client_host,
                     rebalance_timeout, session_timeout, request.get("protocol_type") or "",
                     [(p["name"], bytes(p["metadata"])) for p in request.get("protocols") or ()])
        if not group_id:
            return _error(ErrorCode.INVALID_GROUP_ID, member_id)
        if not (self.settings.min_session_timeout_ms <= session_timeout
                <= self.settings.max_session_timeout_ms):
            return _error(ErrorCode.INVALID_SESSION_TIMEOUT, member_id)
        group = self.groups.get(group_id)
        if group is None:
            if member_id:
                return _error(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
            group = Group(group_id, self.partition_for(group_id), state_timestamp=now_ms)
            self.groups[group_id] = group
        known = (member_id in group.members or member_id in group.pending_members
                 or group.static_member_id(join.instance_id) is not None)
        if not known and len(group.members) >= self.settings.max_size:
            return _error(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id)
        if group.state is S.DEAD:
            # Another request just removed it: the member should find the coordinator again.
            return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id)
        if not group.supports_protocols(join.protocol_type, [n for n, _ in join.protocols]):
            return _error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
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
            return _error(code, member_id)
        member = group.members[member_id]
        if group.state is S.PREPARING_REBALANCE:
            return self._update_and_rebalance(group, member, join, now_ms)
        if group.state is S.COMPLETING_REBALANCE:
            if member.matches(join.protocols):
                # A retried join: the member lost our answer; repeat it.
                return Outcome(body=_current_generation(
                    group, member_id, with_members=group.is_leader(member_id))), Effects()
            return self._update_and_rebalance(group, member, join, now_ms)
        if group.state is S.STABLE:
            if group.is_leader(member_id) or not member.matches(join.protocols):
                return self._update_and_rebalance(group, member, join, now_ms)
            return Outcome(body=_current_generation(group, member_id, with_members=False)), Effects()
        return _error(ErrorCode.UNKNOWN_MEMBER_ID, member_id)

    def _join_static(self, group: Group, member_id: str, join: "_Join", now_ms: int
                     ) -> tuple[Outcome, Effects]:
        old_id = group.static_member_id(join.instance_id)
        if old_id is None:
            return self._add_and_rebalance(group, member_id, join, now_ms)
        effects = Effects()
        old = group.members[old_id]
        # The new incarnation fences the old one (Kafka's replaceStaticMember).
        if old.awaiting_join:
            effects.replies.append(Reply(group.group_id, old_id, "join",
                                         join_body(ErrorCode.FENCED_INSTANCE_ID, old_id)))
        if old.awaiting_sync:
            effects.replies.append(Reply(group.group_id, old_id, "sync",
                                         sync_body(ErrorCode.FENCED_INSTANCE_ID)))
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
            return Effects([Reply(group.group_id, member_id, "join", _current_generation(
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
        effects = self._maybe_prepare_rebalance(group, now_ms)
        effects.extend(self._maybe_complete_join(group, now_ms))
        return Outcome(parked=member_id), effects

    def _update_and_rebalance(self, group: Group, member: Member, join: "_Join", now_ms: int
                              ) -> tuple[Outcome, Effects]:
        member.protocols = join.protocols
        member.rebalance_timeout_ms = join.rebalance_timeout
        member.session_timeout_ms = join.session_timeout
        member.awaiting_join = True
        effects = self._maybe_prepare_rebalance(group, now_ms)
        effects.extend(self._maybe_complete_join(group, now_ms))
        return Outcome(parked=member.member_id), effects

    # -- rebalance phases ----------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: Group, now_ms: int) -> Effects:
        if group.state in REBALANCING_ALLOWED:
            return self.prepare_rebalance(group, now_ms)
        return Effects()

    def prepare_rebalance(self, group: Group, now_ms: int) -> Effects:
        """Start a rebalance: members must rejoin before the join phase ends."""
        effects = Effects()
        if group.state is S.COMPLETING_REBALANCE:
            effects.extend(self._reset_assignment(group, ErrorCode.REBALANCE_IN_PROGRESS))
        group.pending_sync.clear()
        group.sync_deadline = None
        if group.state is S.EMPTY:
            delay = self.settings.initial_rebalance_delay_ms
            group.initial_delay_remaining_ms = max(group.rebalance_timeout_ms() - delay, 0)
            group.new_member_added = False
            group.join_deadline = now_ms + delay
        else:
            group.initial_delay_remaining_ms = None
            group.join_deadline = now_ms + group.rebalance_timeout_ms()
        group.transition(S.PREPARING_REBALANCE, now_ms)
        logger.info("group %s: preparing to rebalance (generation %d)", group.group_id,
                    group.generation)
        return effects

    def _maybe_complete_join(self, group: Group, now_ms: int) -> Effects:
        if group.state is not S.PREPARING_REBALANCE or group.join_deadline is None:
            return Effects()
        if group.initial_delay_remaining_ms is not None:
            if now_ms >= group.join_deadline:
                return self._initial_delay_expired(group, now_ms)
            return Effects()
        if group.all_members_joined() or now_ms >= group.join_deadline:
            return self._complete_join(group, now_ms)
        return Effects()

    def _initial_delay_expired(self, group: Group, now_ms: int) -> Effects:
        remaining = group.initial_delay_remaining_ms or 0
        if group.new_member_added and remaining > 0:
            # Members keep arriving: wait another delay, within the rebalance timeout.
            group.new_member_added = False
            delay = min(self.settings.initial_rebalance_delay_ms, remaining)
            group.initial_delay_remaining_ms = max(remaining - delay, 0)
            group.join_deadline = now_ms + delay
            return Effects()
        return self._complete_join(group, now_ms)

    def _complete_join(self, group: Group, now_ms: int) -> Effects:
        """End the join phase: drop dynamic members that did not rejoin, start the next
        generation, answer every parked JoinGroup (the leader gets the member list)."""
        group.join_deadline = None
        group.initial_delay_remaining_ms = None
        group.new_member_added = False
        for member in list(group.members.values()):
            if not member.awaiting_join and member.group_instance_id is None:
                logger.info("group %s: member %s did not rejoin in time", group.group_id,
                            member.member_id)
                group.remove(member.member_id)
        effects = Effects()
        group.generation += 1
        if not group.members:
            group.protocol_name = None
            group.transition(S.EMPTY, now_ms)
            effects.writes.append(GroupWrite(group.partition, [group.metadata_entry()]))
            logger.info("group %s: generation %d is empty", group.group_id, group.generation)
            return effects
        group.protocol_name = group.select_protocol()
        group.transition(S.COMPLETING_REBALANCE, now_ms)
        for member in group.members.values():
            if member.awaiting_join:
                effects.replies.append(Reply(group.group_id, member.member_id, "join",
                                             _current_generation(
                                                 group, member.member_id,
                                                 with_members=group.is_leader(member.member_id))))
            member.awaiting_join = False
            member.is_new = False
            member.heartbeat_deadline = now_ms + member.session_timeout_ms
        group.pending_sync = set(group.members)
        group.sync_deadline = now_ms + group.rebalance_timeout_ms()
        logger.info("group %s: generation %d with %d member(s), protocol %s", group.group_id,
                    group.generation, len(group.members), group.protocol_name)
        return effects

    def _reset_assignment(self, group: Group, code: int) -> Effects:
        effects = Effects()
        for member in group.members.values():
            member.assignment = b""
            if member.awaiting_sync:
                member.awaiting_sync = False
                effects.replies.append(Reply(group.group_id, member.member_id, "sync",
                                             sync_body(code)))
        return effects

    def _set_assignment(self, group: Group, assignments: dict[str, bytes], now_ms: int) -> Effects:
        effects = Effects()
        for member in group.members.values():
            member.assignment = assignments.get(member.member_id, b"")
            if member.awaiting_sync:
                member.awaiting_sync = False
                member.heartbeat_deadline = now_ms + member.session_timeout_ms
                effects.replies.append(Reply(group.group_id, member.member_id, "sync", sync_body(
                    ErrorCode.NONE, member.assignment, group.protocol_type, group.protocol_name)))
        return effects

    # -- SyncGroup -----------------------------------------------------------------------

    def sync(self, request: dict[str, Any], now_ms: int) -> tuple[Outcome, Effects]:
        """SyncGroup: the leader's assignment is written to the log before anyone gets theirs."""
        member_id = request.get("member_id") or ""
        group = self.groups.get(request.get("group_id") or "")

        def error(code: int) -> tuple[Outcome, Effects]:
            return Outcome(body=sync_body(code)), Effects()

        if group is None:
            return error(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.state is S.DEAD:
            return error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        code = validate_member(group, member_id, request.get("group_instance_id"))
        if code:
            return error(code)
        if int(request.get("generation_id", -1)) != group.generation:
            return error(ErrorCode.ILLEGAL_GENERATION)
        protocol_type, protocol_name = request.get("protocol_type"), request.get("protocol_name")
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
            assignments = {a["member_id"]: bytes(a["assignment"])
                           for a in request.get("assignments") or ()}
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
                effects = self._reset_assignment(group, store_error(code))
                return effects.extend(self._maybe_prepare_rebalance(group, now_ms))
            effects = self._set_assignment(group, assignments, now_ms)
            group.transition(S.STABLE, now_ms)
            logger.info("group %s: generation %d is stable", group.group_id, generation)
            return effects

        return GroupWrite(group.partition, [(GroupKey(group.group_id), stored)], stored_then)

    # -- Heartbeat and LeaveGroup --------------------------------------------------------

    def heartbeat(self, request: dict[str, Any], now_ms: int) -> int:
        """Heartbeat's error code; a good heartbeat pushes the session deadline out."""
        group = self.groups.get(request.get("group_id") or "")
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.state is S.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        member_id = request.get("member_id") or ""
        code = validate_member(group, member_id, request.get("group_instance_id"))
        if code:
            return code
        if int(request.get("generation_id", -1)) != group.generation:
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
                effects.extend(self._maybe_complete_join(group, now_ms))
                codes.append(ErrorCode.NONE)
                continue
            code = validate_member(group, member_id, instance_id)
            codes.append(code)
            if not code:
                logger.info("group %s: member %s left", group_id, member_id)
                effects.extend(self.remove_member(group, member_id, now_ms))
        return ErrorCode.NONE, codes, effects

    def remove_member(self, group: Group, member_id: str, now_ms: int) -> Effects:
        """Drop a member (it left or its session expired) and rebalance the rest."""
        effects = Effects()
        member = group.members.get(member_id)
        if member is None:
            return effects
        if member.awaiting_join:
            effects.replies.append(Reply(group.group_id, member_id, "join",
                                         join_body(ErrorCode.UNKNOWN_MEMBER_ID, member_id)))
        if member.awaiting_sync:
            effects.replies.append(Reply(group.group_id, member_id, "sync",
                                         sync_body(ErrorCode.UNKNOWN_MEMBER_ID)))
        group.remove(member_id)
        if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
            effects.extend(self.prepare_rebalance(group, now_ms))
        elif group.state is S.PREPARING_REBALANCE:
            effects.extend(self._maybe_complete_join(group, now_ms))
        return effects

    # -- deadlines -----------------------------------------------------------------------

    def next_deadline(self, group: Group) -> int | None:
        """The earliest time `expire` has work to do for `group`."""
        times = list(group.pending_members.values())
        for member in group.members.values():
            if member.awaiting_join:
                if member.is_new:
                    times.append(member.join_deadline)
            elif not member.awaiting_sync:
                times.append(member.heartbeat_deadline)
        if group.join_deadline is not None and group.state is S.PREPARING_REBALANCE:
            times.append(group.join_deadline)
        if group.sync_deadline is not None:
            times.append(group.sync_deadline)
        return min(times, default=None)

    def expire(self, group: Group, now_ms: int) -> Effects:
        """Session timeouts, the end of the join phase and of the sync phase, as of now."""
        effects = Effects()
        if group.state is S.DEAD:
            return effects
        for member_id, deadline in list(group.pending_members.items()):
            if deadline <= now_ms:
                del group.pending_members[member_id]
        for member in list(group.members.values()):
            if member.awaiting_join:
                expired = member.is_new and member.join_deadline <= now_ms
            else:
                expired = not member.awaiting_sync and member.heartbeat_deadline <= now_ms
            if expired and member.member_id in group.members:
                logger.info("group %s: member %s session expired", group.group_id,
                            member.member_id)
                effects.extend(self.remove_member(group, member.member_id, now_ms))
        if group.sync_deadline is not None and group.sync_deadline <= now_ms:
            group.sync_deadline = None
            if group.state in (S.STABLE, S.COMPLETING_REBALANCE) and group.pending_sync:
                for member_id in list(group.pending_sync):
                    logger.info("group %s: member %s did not sync in time", group.group_id,
                                member_id)
                    effects.extend(self._drop_silently(group, member_id))
                effects.extend(self.prepare_rebalance(group, now_ms))
        effects.extend(self._maybe_complete_join(group, now_ms))
        return effects

    def _drop_silently(self, group: Group, member_id: str) -> Effects:
        effects = Effects()
        member = group.remove(member_id)
        if member is not None and member.awaiting_sync:
            effects.replies.append(Reply(group.group_id, member_id, "sync",
                                         sync_body(ErrorCode.UNKNOWN_MEMBER_ID)))
        return effects


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
