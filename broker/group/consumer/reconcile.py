"""One member's step towards its target assignment (Kafka's CurrentAssignmentBuilder
decisions). A partition another member still holds is not given until that member has
revoked it; a member keeps its epoch until it has acknowledged its revocations. Pure.
"""

from __future__ import annotations

import uuid
from typing import Callable

from broker.group.consumer.model import Assignment, ConsumerMember, MemberState

OwnedPartitions = list[tuple[uuid.UUID, list[int]]] | None
HeldByOther = Callable[[uuid.UUID, int], bool]


def owns_any(owned: OwnedPartitions, partitions: Assignment) -> bool:
    """Whether the member still reports any of `partitions`; not reporting counts as yes."""
    if owned is None:
        return True
    return any(p in partitions.get(topic, ()) for topic, parts in owned for p in parts)


def reconcile(member: ConsumerMember, target_epoch: int, target: Assignment,
              held_by_other: HeldByOther, owned: OwnedPartitions) -> ConsumerMember:
    """`member` after this heartbeat: unchanged, or at its next assignment and epoch."""
    if member.is_reconciled_to(target_epoch):
        return member
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if owns_any(owned, member.pending_revocation):
            return member
        return _next(member, member.member_epoch + 1, target_epoch, target, held_by_other, owned)
    return _next(member, member.member_epoch, target_epoch, target, held_by_other, owned)


def _next(member: ConsumerMember, epoch: int, target_epoch: int, target: Assignment,
          held_by_other: HeldByOther, owned: OwnedPartitions) -> ConsumerMember:
    assigned: dict[uuid.UUID, frozenset[int]] = {}
    revoking: dict[uuid.UUID, frozenset[int]] = {}
    adding: dict[uuid.UUID, frozenset[int]] = {}
    unreleased = False
    for topic in set(target) | set(member.assigned):
        wanted = target.get(topic, frozenset())
        current = member.assigned.get(topic, frozenset())
        kept = current & wanted
        new = {p for p in wanted - kept if not held_by_other(topic, p)}
        unreleased = unreleased or len(new) < len(wanted - kept)
        if kept:
            assigned[topic] = kept
        if current - kept:
            revoking[topic] = current - kept
        if new:
            adding[topic] = frozenset(new)
    if revoking and owns_any(owned, revoking):
        # Keep the epoch; the member must first give these up.
        return _with(member, MemberState.UNREVOKED_PARTITIONS, epoch, assigned, revoking)
    for topic, parts in adding.items():
        assigned[topic] = assigned.get(topic, frozenset()) | parts
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return _with(member, state, target_epoch, assigned, {})


def _with(member: ConsumerMember, state: MemberState, epoch: int, assigned: Assignment,
          revoking: Assignment) -> ConsumerMember:
    previous = member.member_epoch if epoch != member.member_epoch else member.previous_member_epoch
    return member.copy(state=state, member_epoch=epoch, previous_member_epoch=previous,
                       assigned=assigned, pending_revocation=revoking)
