"""Which member a heartbeat speaks for, and whether its epoch is the one the coordinator
knows (Kafka's member and epoch checks, of heartbeats and of offset commits and fetches).
Pure."""

from __future__ import annotations

import logging

from broker.group.consumer.heartbeat import HeartbeatError
from broker.group.consumer.model import (LEAVE_GROUP_STATIC_MEMBER_EPOCH, ConsumerGroup,
                                         ConsumerMember, MemberState)
from broker.group.consumer.reconcile import OwnedPartitions
from clients.protocol import ErrorCode

logger = logging.getLogger(__name__)


def dynamic_member(group: ConsumerGroup, member_id: str, epoch: int,
                   owned: OwnedPartitions) -> ConsumerMember:
    """The member a heartbeat without an instance id speaks for (new when joining)."""
    member = group.members.get(member_id)
    if member is None:
        if epoch != 0:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"Member {member_id} is not a member of group "
                                 f"{group.group_id}.")
        logger.info("consumer group %s: member %s joins", group.group_id, member_id)
        return ConsumerMember(member_id)
    check_epoch(member, epoch, owned)
    return member


def static_member(group: ConsumerGroup, member_id: str, epoch: int,
                  instance_id: str, owned: OwnedPartitions) -> ConsumerMember:
    """The member of `instance_id`; a join under it replaces a member that left with -2."""
    existing = group.static_member(instance_id)
    if epoch == 0:
        if existing is None:
            return group.members.get(member_id) or ConsumerMember(member_id)
        if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise HeartbeatError(ErrorCode.UNRELEASED_INSTANCE_ID,
                                 f"Static member {member_id} with instance id "
                                 f"{instance_id} cannot join the group because the "
                                 f"instance id is owned by {existing.member_id} member.")
        # The returning instance takes over the old member's assignment under its new id.
        target = group.target.get(existing.member_id)
        group.remove(existing.member_id)
        replacement = existing.copy(member_id=member_id, member_epoch=0,
                                    previous_member_epoch=0, state=MemberState.STABLE,
                                    pending_revocation={}, rebalance_deadline=None)
        if target is not None:
            group.target[member_id] = target
        group.put(replacement)
        return replacement
    existing = instance_member(group, instance_id, member_id)
    check_epoch(existing, epoch, owned)
    return existing


def instance_member(group: ConsumerGroup, instance_id: str, member_id: str) -> ConsumerMember:
    """The current member of `instance_id`, which must be `member_id`: UNKNOWN_MEMBER_ID
    for an unknown instance, FENCED_INSTANCE_ID when another member holds it now."""
    existing = group.static_member(instance_id)
    if existing is None:
        raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                             f"Instance id {instance_id} is unknown.")
    if existing.member_id != member_id:
        raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID,
                             f"Static member {member_id} with instance id {instance_id} "
                             f"was fenced by member {existing.member_id}.")
    return existing


def check_epoch(member: ConsumerMember, epoch: int, owned: OwnedPartitions) -> None:
    """Kafka's member-epoch check: a newer epoch than ours, or an older one that is not the
    previous epoch with a subset of the assignment (its last answer got lost), is fenced."""
    if epoch > member.member_epoch:
        raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH,
                             f"The consumer group member has a greater member epoch ({epoch}) "
                             f"than the one known by the group coordinator "
                             f"({member.member_epoch}). The member must abandon all its "
                             "partitions and rejoin.")
    if epoch < member.member_epoch:
        subset = owned is not None and all(
            set(parts) <= member.assigned.get(topic, frozenset()) for topic, parts in owned)
        if epoch != member.previous_member_epoch or not subset:
            raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH,
                                 f"The consumer group member has a smaller member epoch "
                                 f"({epoch}) than the one known by the group coordinator "
                                 f"({member.member_epoch}). The member must abandon all its "
                                 "partitions and rejoin.")


def validate_commit(group: ConsumerGroup, member_id: str, member_epoch: int,
                    version: int) -> int:
    """Kafka's check of an OffsetCommit to a consumer group (NONE if allowed)."""
    if member_epoch < 0 and not group.members:
        return ErrorCode.NONE  # admin clients and assign() users, on an empty group
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if version < 9:
        return ErrorCode.UNSUPPORTED_VERSION
    if member_epoch != member.member_epoch:
        return ErrorCode.STALE_MEMBER_EPOCH
    return ErrorCode.NONE


def validate_fetch(group: ConsumerGroup, member_id: str | None, member_epoch: int) -> int:
    """Kafka's check of an OffsetFetch of a consumer group: an admin fetch (no member id,
    epoch -1) always passes."""
    if member_id is None and member_epoch < 0:
        return ErrorCode.NONE
    member = group.members.get(member_id or "")
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if member_epoch != member.member_epoch:
        return ErrorCode.STALE_MEMBER_EPOCH
    return ErrorCode.NONE
