"""Driving a `GroupEngine` directly: requests, and settling its effects as the runtime would."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

from broker.group.engine import GroupEngine
from broker.group.model import Effects, GroupCoordinatorSettings, GroupWrite, MembershipReply
from clients.protocol.messages.heartbeat import HeartbeatRequestData
from clients.protocol.messages.join_group import JoinGroupRequestData
from clients.protocol.messages.offset_commit import OffsetCommitRequestData
from clients.protocol.messages.sync_group import SyncGroupRequestData

SETTINGS = GroupCoordinatorSettings(num_partitions=4, initial_rebalance_delay_ms=100,
                                    min_session_timeout_ms=100)


def new_engine(**overrides: Any) -> GroupEngine:
    ids = itertools.count(1)
    return GroupEngine(replace(SETTINGS, **overrides),
                       new_member_id=lambda client_id: f"{client_id}-{next(ids)}")


def join_request(group: str = "g", member: str = "", *, protocols: Any = (("range", b"r"),),
                 session: int = 1000, rebalance: int = 2000, instance: str | None = None,
                 protocol_type: str = "consumer") -> JoinGroupRequestData:
    return JoinGroupRequestData(
        group_id=group, session_timeout_ms=session, rebalance_timeout_ms=rebalance,
        member_id=member, group_instance_id=instance, protocol_type=protocol_type,
        protocols=[JoinGroupRequestData.JoinGroupRequestProtocol(name=n, metadata=m)
                   for n, m in protocols])


def sync_request(group: str, member: str, generation: int,
                 assignments: dict[str, bytes] | None = None,
                 instance: str | None = None) -> SyncGroupRequestData:
    return SyncGroupRequestData(
        group_id=group, member_id=member, generation_id=generation, group_instance_id=instance,
        assignments=[SyncGroupRequestData.SyncGroupRequestAssignment(member_id=m, assignment=a)
                     for m, a in (assignments or {}).items()])


def heartbeat_request(group: str, member: str, generation: int,
                      instance: str | None = None) -> HeartbeatRequestData:
    return HeartbeatRequestData(group_id=group, member_id=member, generation_id=generation,
                                group_instance_id=instance)


def commit_request(group: str, offsets: dict[tuple[str, int], int], *, generation: int = -1,
                   member: str = "", metadata: str = "", retention: int = -1
                   ) -> OffsetCommitRequestData:
    topics: dict[str, list[OffsetCommitRequestData.OffsetCommitRequestPartition]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(OffsetCommitRequestData.OffsetCommitRequestPartition(
            partition_index=partition, committed_offset=offset, committed_leader_epoch=3,
            committed_metadata=metadata))
    return OffsetCommitRequestData(
        group_id=group, generation_id_or_member_epoch=generation, member_id=member,
        retention_time_ms=retention,
        topics=[OffsetCommitRequestData.OffsetCommitRequestTopic(name=t, partitions=ps)
                for t, ps in topics.items()])


class Log:
    """Settles writes (committed unless told otherwise) and keeps every entry written."""

    def __init__(self) -> None:
        self.entries: list[tuple[int, Any, Any]] = []

    def settle(self, effects: Effects, code: int = 0) -> dict[tuple[str, str], MembershipReply]:
        """Run the writes (and what follows them); every reply by (member, kind)."""
        replies = {(r.member_id, r.kind): r.body for r in effects.replies}
        pending: list[GroupWrite] = list(effects.writes)
        while pending:
            write = pending.pop(0)
            if not code:
                self.entries += [(write.partition, k, v) for k, v in write.entries]
            if write.then is not None:
                more = write.then(code)
                replies.update({(r.member_id, r.kind): r.body for r in more.replies})
                pending += more.writes
        return replies


def join_all(engine: GroupEngine, log: Log, members: list[str], now: int = 0,
             group: str = "g", protocols: Any = (("range", b"r"),), **request: Any
             ) -> dict[tuple[str, str], MembershipReply]:
    """Join `members` (known ids) into a rebalance; the replies once the join phase ends."""
    replies: dict[tuple[str, str], MembershipReply] = {}
    for member in members:
        outcome, effects = engine.join(join_request(group, member, protocols=protocols, **request),
                                       client_id="c", client_host="/h",
                                       require_known_member_id=False, now_ms=now)
        assert outcome.parked == member
        replies.update(log.settle(effects))
    # Run the initial delay (extended while members arrived) to its end.
    while engine.groups[group].initial_delay_remaining_ms is not None:
        deadline = engine.groups[group].join_deadline
        assert deadline is not None
        now = deadline
        replies.update(log.settle(engine.tick(now)))
    return replies
