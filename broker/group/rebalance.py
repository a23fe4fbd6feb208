"""Rebalance phases and deadlines of a classic group: preparing a rebalance, ending the
join phase (with the initial delay), handing out assignments, dropping members, and the
session, join and sync deadlines that drive it all. Pure: time is an argument and what
must happen outside comes back as `Effects`.
"""

from __future__ import annotations

import logging

from broker.group.model import (ClassicGroupState, Effects, Group, GroupCoordinatorSettings,
                                GroupWrite, Reply)
from broker.group.responses import current_generation, parked_error_replies, sync_body
from clients.protocol import ErrorCode

logger = logging.getLogger(__name__)

S = ClassicGroupState
REBALANCING_ALLOWED = (S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY)


class Rebalancer:
    """Moves groups through a rebalance; shared by the request operations and the timer."""

    def __init__(self, settings: GroupCoordinatorSettings) -> None:
        self.settings = settings

    def maybe_prepare(self, group: Group, now_ms: int) -> Effects:
        """Start a rebalance unless one is already under way."""
        if group.state in REBALANCING_ALLOWED:
            return self.prepare(group, now_ms)
        return Effects()

    def prepare(self, group: Group, now_ms: int) -> Effects:
        """Start a rebalance: members must rejoin before the join phase ends."""
        effects = Effects()
        if group.state is S.COMPLETING_REBALANCE:
            effects.extend(self.reset_assignment(group, ErrorCode.REBALANCE_IN_PROGRESS))
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

    def maybe_complete_join(self, group: Group, now_ms: int) -> Effects:
        """End the join phase if every member has rejoined or its deadline has passed."""
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
        """End the join phase: drop dynamic members that did not rejoin, make sure a member
        that rejoined leads, start the next generation, answer every parked JoinGroup (the
        leader gets the member list)."""
        group.join_deadline = None
        group.initial_delay_remaining_ms = None
        group.new_member_added = False
        # Before the removals: removing the leader makes another member leader at once.
        previous_leader = group.leader_id
        for member in list(group.members.values()):
            if not member.awaiting_join and member.group_instance_id is None:
                logger.info("group %s: member %s did not rejoin in time", group.group_id,
                            member.member_id)
                group.remove(member.member_id)
        if group.members and not group.elect_joined_leader():
            # Only static members that have not rejoined are left. As Kafka does, wait
            # another rebalance timeout: they either come back or their sessions expire,
            # and the last expiry ends the phase with an Empty group.
            group.join_deadline = now_ms + group.rebalance_timeout_ms()
            logger.warning("group %s: no member rejoined; waiting until %d for the static "
                           "members", group.group_id, group.join_deadline)
            return Effects()
        if group.leader_id != previous_leader:
            logger.info("group %s: leader %s did not rejoin; %s leads instead", group.group_id,
                        previous_leader, group.leader_id)
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
                                             current_generation(
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

    def reset_assignment(self, group: Group, code: int) -> Effects:
        """Clear the assignments; members waiting in SyncGroup get `code`."""
        effects = Effects()
        for member in group.members.values():
            member.assignment = b""
            if member.awaiting_sync:
                member.awaiting_sync = False
                effects.replies.append(Reply(group.group_id, member.member_id, "sync",
                                             sync_body(code)))
        return effects

    def set_assignment(self, group: Group, assignments: dict[str, bytes], now_ms: int) -> Effects:
        """Hand out the stored assignments to the members waiting in SyncGroup."""
        effects = Effects()
        for member in group.members.values():
            member.assignment = assignments.get(member.member_id, b"")
            if member.awaiting_sync:
                member.awaiting_sync = False
                member.heartbeat_deadline = now_ms + member.session_timeout_ms
                effects.replies.append(Reply(group.group_id, member.member_id, "sync", sync_body(
                    ErrorCode.NONE, member.assignment, group.protocol_type, group.protocol_name)))
        return effects

    def remove_member(self, group: Group, member_id: str, now_ms: int) -> Effects:
        """Drop a member (it left or its session expired) and rebalance the rest."""
        effects = Effects()
        member = group.members.get(member_id)
        if member is None:
            return effects
        effects.replies.extend(parked_error_replies(group.group_id, member,
                                                    ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member_id)
        if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
            effects.extend(self.prepare(group, now_ms))
        elif group.state is S.PREPARING_REBALANCE:
            effects.extend(self.maybe_complete_join(group, now_ms))
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
                    # Nothing to answer: a member that sent SyncGroup left pending_sync.
                    group.remove(member_id)
                effects.extend(self.prepare(group, now_ms))
        effects.extend(self.maybe_complete_join(group, now_ms))
        return effects
