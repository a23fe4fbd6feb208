"""The consumer groups of this coordinator: ConsumerGroupHeartbeat decisions, session and
rebalance timeouts, and the member-epoch checks of offset commits and fetches (Kafka's
GroupMetadataManager and ConsumerGroup decisions). Pure: time and topic metadata are
arguments. What must be written to `__consumer_offsets` is collected by `pending_writes`;
groups a load found come in through `adopt`.
"""

from __future__ import annotations

import base64
import logging
import uuid
from typing import Any, Callable

from broker.group.consumer.assignors import ASSIGNORS
from broker.group.consumer.heartbeat import (HeartbeatError, owned_partitions,
                                             subscribed_topics, validate)
from broker.group.consumer.model import (LEAVE_GROUP_MEMBER_EPOCH,
                                         LEAVE_GROUP_STATIC_MEMBER_EPOCH, ConsumerGroup,
                                         ConsumerMember, MemberState, TopicMetadata)
from broker.group.consumer.members import (dynamic_member, instance_member, static_member,
                                           validate_commit, validate_fetch)
from broker.group.consumer.persistence import group_from_state, group_state
from broker.group.consumer.reconcile import OwnedPartitions, reconcile
from broker.group.consumer.settings import ConsumerGroupSettings
from broker.group.routing import partition_for_group
from clients.protocol import ErrorCode
from clients.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequestData,
    ConsumerGroupHeartbeatResponseData,
)

logger = logging.getLogger(__name__)

Response = ConsumerGroupHeartbeatResponseData


def random_member_id() -> str:
    """Kafka's `Uuid.randomUuid().toString()`: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class ConsumerGroupManager:
    """Every consumer-type group of the offsets partitions this broker leads."""

    def __init__(self, settings: ConsumerGroupSettings,
                 new_member_id: Callable[[], str] = random_member_id) -> None:
        self.settings = settings
        self.groups: dict[str, ConsumerGroup] = {}
        self._new_member_id = new_member_id
        # The state last written (or loaded) of each group, and groups to tombstone.
        self._written: dict[str, Any] = {}
        self._deleted: dict[str, int] = {}

    # -- heartbeat -----------------------------------------------------------------------

    def heartbeat(self, request: ConsumerGroupHeartbeatRequestData, version: int, *,
                  client_id: str,
                  client_host: str, topics: TopicMetadata, classic_has_members: bool,
                  now_ms: int) -> Response:
        """The response body of one ConsumerGroupHeartbeat; `topics` is every topic in the
        cluster and `classic_has_members` whether a classic group of this id has members."""
        self.expire(now_ms, topics)
        try:
            validate(request, version, self.settings.assignors)
            epoch = request.member_epoch
            if epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._leave(request, epoch, topics, now_ms)
            return self._heartbeat(request, epoch, client_id, client_host, topics,
                                   classic_has_members, now_ms)
        except HeartbeatError as exc:
            return error_body(exc.code, exc.message)

    def _group(self, group_id: str, create: bool, classic_has_members: bool) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if not create:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND,
                                 f"Consumer group {group_id} not found.")
        if classic_has_members:
            # Kafka upgrades a classic group online only under a migration policy; Raftka
            # has none, which is Kafka's answer with the policy disabled.
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND,
                                 f"Group {group_id} is not a consumer group.")
        group = ConsumerGroup(group_id, partition_for_group(group_id,
                                                            self.settings.num_partitions),
                              assignor_name=self.settings.assignors[0])
        self.groups[group_id] = group
        return group

    def _heartbeat(self, request: ConsumerGroupHeartbeatRequestData, epoch: int,
                   client_id: str, client_host: str, topics: TopicMetadata,
                   classic_has_members: bool, now_ms: int) -> Response:
        group_id = request.group_id
        joining = epoch == 0
        group = self._group(group_id, joining, classic_has_members)
        member_id = request.member_id
        if (len(group.members) >= self.settings.max_size
                and (not member_id or member_id not in group.members)):
            raise HeartbeatError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                 "The consumer group has reached its maximum capacity of "
                                 f"{self.settings.max_size} members.")
        member_id = member_id or self._new_member_id()
        owned = owned_partitions(request)
        instance_id = request.instance_id
        if instance_id is None:
            member = dynamic_member(group, member_id, epoch, owned)
        else:
            member = static_member(group, member_id, epoch, instance_id, owned)
        updated = member.copy(client_id=client_id, client_host=client_host)
        # Null fields did not change since the last heartbeat.
        if request.instance_id is not None:
            updated.instance_id = request.instance_id
        if request.rack_id is not None:
            updated.rack_id = request.rack_id
        if request.server_assignor is not None:
            updated.server_assignor = request.server_assignor
        if request.subscribed_topic_regex is not None:
            updated.subscribed_topic_regex = request.subscribed_topic_regex
        if request.rebalance_timeout_ms != -1:
            updated.rebalance_timeout_ms = request.rebalance_timeout_ms
        if request.subscribed_topic_names is not None:
            updated.subscribed_topic_names = tuple(request.subscribed_topic_names)
        if updated.subscribed_topic_regex == "":
            updated.subscribed_topic_regex = None  # an empty regex unsubscribes from it
        bump = (member.member_id not in group.members
                or updated.subscription() != member.subscription()
                or updated.server_assignor != member.server_assignor)
        group.put(updated)
        if self._refresh_metadata(group, topics) or bump:
            group.group_epoch += 1
            logger.info("consumer group %s: group epoch bumped to %d", group_id,
                        group.group_epoch)
        if group.group_epoch > group.assignment_epoch:
            self._assign(group)
        updated = self._reconcile(group, updated, owned, now_ms)
        updated.session_deadline = now_ms + self.settings.session_timeout_ms
        full = joining or (request.rebalance_timeout_ms != -1
                           and request.subscribed_topic_names is not None
                           and owned is not None)
        body = Response(member_id=updated.member_id, member_epoch=updated.member_epoch,
                        heartbeat_interval_ms=self.settings.heartbeat_interval_ms)
        if full or updated.assigned != member.assigned:
            body.assignment = Response.Assignment(topic_partitions=[
                Response.TopicPartitions(topic_id=topic, partitions=sorted(parts))
                for topic, parts in sorted(updated.assigned.items(), key=lambda i: str(i[0]))])
        return body

    def _refresh_metadata(self, group: ConsumerGroup, topics: TopicMetadata) -> bool:
        """Recompute the subscribed topics' metadata; True when it changed."""
        wanted: set[str] = set()
        for member in group.members.values():
            wanted |= subscribed_topics(member, topics)
        metadata = {name: topics[name] for name in sorted(wanted)}
        if metadata == group.subscription_metadata:
            return False
        group.subscription_metadata = metadata
        return True

    def _assign(self, group: ConsumerGroup) -> None:
        group.assignor_name = self._preferred_assignor(group)
        subscriptions = {m.member_id: subscribed_topics(m, group.subscription_metadata)
                         for m in group.members.values()}
        group.target = ASSIGNORS[group.assignor_name](
            subscriptions, group.subscription_metadata, group.target)
        group.assignment_epoch = group.group_epoch

    def _preferred_assignor(self, group: ConsumerGroup) -> str:
        """The assignor most members ask for; the default when none asks."""
        votes: dict[str, int] = {}
        for member in group.members.values():
            if member.server_assignor is not None:
                votes[member.server_assignor] = votes.get(member.server_assignor, 0) + 1
        if not votes:
            return self.settings.assignors[0]
        return max(sorted(votes), key=lambda name: votes[name])

    def _reconcile(self, group: ConsumerGroup, member: ConsumerMember,
                   owned: OwnedPartitions, now_ms: int) -> ConsumerMember:
        held = group.owners()

        def held_by_other(topic: uuid.UUID, partition: int) -> bool:
            owner = held.get((topic, partition))
            return owner is not None and owner != member.member_id

        target = group.target.get(member.member_id, {})
        updated = reconcile(member, group.assignment_epoch, target, held_by_other, owned)
        if updated is not member:
            if updated.state is MemberState.UNREVOKED_PARTITIONS:
                if member.state is not MemberState.UNREVOKED_PARTITIONS \
                        or updated.member_epoch != member.member_epoch:
                    updated.rebalance_deadline = now_ms + max(updated.rebalance_timeout_ms, 0)
            else:
                updated.rebalance_deadline = None
        group.put(updated)
        return updated

    # -- leaving and fencing -------------------------------------------------------------

    def _leave(self, request: ConsumerGroupHeartbeatRequestData, epoch: int,
               topics: TopicMetadata, now_ms: int) -> Response:
        group_id = request.group_id
        group = self.groups.get(group_id)
        if group is None:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND,
                                 f"Consumer group {group_id} not found.")
        member_id = request.member_id
        instance_id = request.instance_id
        body = Response(member_id=member_id, member_epoch=epoch)
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                     f"Member {member_id} is not a member of group {group_id}.")
        else:
            member = instance_member(group, instance_id, member_id)
            if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                # Leaves for a while: keeps its assignment until its session expires.
                group.put(member.copy(member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                                      pending_revocation={}, rebalance_deadline=None))
                logger.info("consumer group %s: static member %s (%s) left for now",
                            group_id, member_id, instance_id)
                return body
        logger.info("consumer group %s: member %s left", group_id, member.member_id)
        self._fence(group, member.member_id, topics)
        return body

    def _fence(self, group: ConsumerGroup, member_id: str, topics: TopicMetadata) -> None:
        """Remove a member: its partitions return to the pool in the next group epoch."""
        group.remove(member_id)
        self._refresh_metadata(group, topics)
        group.group_epoch += 1

    def expire(self, now_ms: int, topics: TopicMetadata) -> list[tuple[str, str]]:
        """Fence members past their session, or past their rebalance timeout while they
        still hold partitions to revoke; returns (group id, member id) of each."""
        fenced = []
        for group in self.groups.values():
            for member in list(group.members.values()):
                late_revoke = (member.rebalance_deadline is not None
                               and member.rebalance_deadline <= now_ms)
                if member.session_deadline <= now_ms or late_revoke:
                    logger.info("consumer group %s: member %s fenced (%s timeout)",
                                group.group_id, member.member_id,
                                "rebalance" if late_revoke else "session")
                    self._fence(group, member.member_id, topics)
                    fenced.append((group.group_id, member.member_id))
        return fenced

    # -- offsets -------------------------------------------------------------------------

    def validate_commit(self, group_id: str, member_id: str, member_epoch: int,
                        version: int) -> int:
        """The error of an OffsetCommit to consumer group `group_id` (NONE if allowed)."""
        return validate_commit(self.groups[group_id], member_id, member_epoch, version)

    def validate_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> int:
        """The error of an OffsetFetch of consumer group `group_id` (NONE if allowed)."""
        return validate_fetch(self.groups[group_id], member_id, member_epoch)

    # -- administration ------------------------------------------------------------------

    def delete(self, group_id: str) -> int:
        """DeleteGroups on a consumer group: only an empty one goes (its offsets with it)."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        self.drop(group_id)
        return ErrorCode.NONE

    def active(self) -> set[str]:
        """Ids of the groups that have members (their offsets do not expire)."""
        return {group_id for group_id, group in self.groups.items() if group.members}

    def forget(self, keep: Callable[[str], bool]) -> None:
        """Drop the groups whose offsets partition this broker no longer serves."""
        for group_id in [g for g in self.groups if not keep(g)]:
            del self.groups[group_id]
            self._written.pop(group_id, None)
        for group_id in [g for g in self._deleted if not keep(g)]:
            del self._deleted[group_id]

    def drop(self, group_id: str) -> None:
        """Remove a group (deleted, or turned classic); its record is tombstoned."""
        group = self.groups.pop(group_id, None)
        if group is not None:
            self._deleted[group_id] = group.partition

    # -- persistence ---------------------------------------------------------------------

    def adopt(self, loaded: dict[str, tuple[int, Any]], now_ms: int) -> None:
        """Take over the groups a load of their offsets partition found (and empty
        `loaded`); a group already live here is newer than its record."""
        for group_id, (partition, stored) in list(loaded.items()):
            del loaded[group_id]
            if group_id in self.groups:
                continue
            self.groups[group_id] = group_from_state(group_id, partition, stored.state, now_ms,
                                                     self.settings.session_timeout_ms)
            self._written[group_id] = stored.state

    def pending_writes(self) -> list[tuple[str, int, Any | None]]:
        """(group id, partition, state or None for a tombstone) of every group whose stored
        state is out of date; they count as written from now on (`unwritten` undoes it)."""
        out: list[tuple[str, int, Any | None]] = []
        for group_id, partition in self._deleted.items():
            out.append((group_id, partition, None))
            self._written.pop(group_id, None)
        self._deleted.clear()
        for group_id, group in self.groups.items():
            state = group_state(group)
            if self._written.get(group_id) != state:
                out.append((group_id, group.partition, state))
                self._written[group_id] = state
        return out

    def unwritten(self, group_id: str) -> None:
        """A write of `group_id` failed: it is written again with the next change."""
        self._written.pop(group_id, None)


def error_body(code: int, message: str | None = None) -> Response:
    """A ConsumerGroupHeartbeat answer carrying only an error."""
    return Response(error_code=int(code), error_message=message)
