"""Response bodies of the group membership APIs (JoinGroup, SyncGroup), and what an
engine operation answers: a body now, or later for a parked request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from broker.group.model import Effects, Group, Member, MembershipReply, Reply
from clients.protocol import ErrorCode
from clients.protocol.messages.join_group import JoinGroupResponseData
from clients.protocol.messages.sync_group import SyncGroupResponseData

JoinGroupMember = JoinGroupResponseData.JoinGroupResponseMember


@dataclass(frozen=True)
class Outcome:
    """A request's own answer: `body` now, or later through a Reply to `parked` (member id)."""

    body: MembershipReply | None = None
    parked: str | None = None


def join_body(code: int, member_id: str = "", *, generation: int = -1,
              protocol_type: str | None = None, protocol_name: str | None = None,
              leader: str = "", members: Iterable[JoinGroupMember] = (),
              skip_assignment: bool = False) -> JoinGroupResponseData:
    """A JoinGroup response body (latest version's fields)."""
    return JoinGroupResponseData(
        error_code=int(code), generation_id=generation, protocol_type=protocol_type,
        protocol_name=protocol_name, leader=leader, skip_assignment=skip_assignment,
        member_id=member_id, members=list(members))


def sync_body(code: int, assignment: bytes = b"", protocol_type: str | None = None,
              protocol_name: str | None = None) -> SyncGroupResponseData:
    """A SyncGroup response body."""
    return SyncGroupResponseData(error_code=int(code), protocol_type=protocol_type,
                                 protocol_name=protocol_name, assignment=assignment)


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


def generation_members(group: Group) -> list[JoinGroupMember]:
    """The JoinGroup member list the leader receives."""
    return [JoinGroupMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                            metadata=m.metadata_for(group.protocol_name))
            for m in group.members.values()]


def current_generation(group: Group, member_id: str, *, with_members: bool,
                       skip_assignment: bool = False) -> JoinGroupResponseData:
    """A successful JoinGroup answer describing the current generation."""
    return join_body(ErrorCode.NONE, member_id, generation=group.generation,
                     protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                     leader=group.leader_id or "",
                     members=generation_members(group) if with_members else (),
                     skip_assignment=skip_assignment)


def join_error(code: int, member_id: str = "") -> tuple[Outcome, Effects]:
    """A JoinGroup refused at once."""
    return Outcome(body=join_body(code, member_id)), Effects()


def parked_error_replies(group_id: str, member: Member, code: int) -> list[Reply]:
    """`code` for each request `member` has parked (a JoinGroup, a SyncGroup, or neither)."""
    replies = []
    if member.awaiting_join:
        replies.append(Reply(group_id, member.member_id, "join", join_body(code, member.member_id)))
    if member.awaiting_sync:
        replies.append(Reply(group_id, member.member_id, "sync", sync_body(code)))
    return replies
