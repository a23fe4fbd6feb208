"""A consumer group as the plain data of its `__consumer_offsets` record, and back. Pure.

Deadlines are not stored: a loaded group's members get a fresh session, as Kafka's new
coordinator gives them.
"""

from __future__ import annotations

import uuid
from typing import Any

from broker.group.consumer.model import (Assignment, ConsumerGroup, ConsumerMember,
                                         MemberState)


def _assignment_data(assignment: Assignment) -> list[list[Any]]:
    return [[topic.bytes, sorted(parts)]
            for topic, parts in sorted(assignment.items(), key=lambda i: i[0].bytes)]


def _assignment(data: list[list[Any]]) -> Assignment:
    return {uuid.UUID(bytes=bytes(topic)): frozenset(int(p) for p in parts)
            for topic, parts in data}


def _member_data(m: ConsumerMember) -> list[Any]:
    return [m.member_id, m.instance_id, m.rack_id, m.client_id, m.client_host,
            m.rebalance_timeout_ms, list(m.subscribed_topic_names), m.subscribed_topic_regex,
            m.server_assignor, m.member_epoch, m.previous_member_epoch, m.state.value,
            _assignment_data(m.assigned), _assignment_data(m.pending_revocation)]


def group_state(group: ConsumerGroup) -> list[Any]:
    """What is stored of `group`."""
    return [group.group_epoch, group.assignment_epoch, group.assignor_name,
            [[name, topic_id.bytes, count]
             for name, (topic_id, count) in sorted(group.subscription_metadata.items())],
            [_member_data(m) for m in group.members.values()],
            [[member_id, _assignment_data(target)]
             for member_id, target in sorted(group.target.items())]]


def group_from_state(group_id: str, partition: int, state: list[Any], now_ms: int,
                     session_timeout_ms: int) -> ConsumerGroup:
    """The group a stored state describes; each member's session starts at `now_ms`."""
    epoch, assignment_epoch, assignor, metadata, members, targets = state
    group = ConsumerGroup(group_id, partition, int(epoch), int(assignment_epoch),
                          assignor_name=str(assignor))
    group.subscription_metadata = {str(name): (uuid.UUID(bytes=bytes(topic_id)), int(count))
                                   for name, topic_id, count in metadata}
    for m in members:
        member = ConsumerMember(
            str(m[0]), m[1], m[2], str(m[3]), str(m[4]), int(m[5]), tuple(m[6]), m[7], m[8],
            int(m[9]), int(m[10]), MemberState(m[11]), _assignment(m[12]), _assignment(m[13]),
            session_deadline=now_ms + session_timeout_ms)
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            member.rebalance_deadline = now_ms + max(member.rebalance_timeout_ms, 0)
        group.put(member)
    group.target = {str(member_id): _assignment(target) for member_id, target in targets}
    return group
