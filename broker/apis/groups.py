"""The group APIs on the wire: version differences and where each API reports an error
(top level, per group, per partition or per coordinator key), around `GroupCoordinator`.

FindCoordinator v0-4, JoinGroup v0-9, SyncGroup v0-5, Heartbeat v0-4, LeaveGroup v0-5,
OffsetCommit v2-9, OffsetFetch v1-9, ListGroups v0-4, DescribeGroups v0-5, DeleteGroups v0-2,
OffsetDelete v0. Consumer-type groups (KIP-848) answer here too: their offsets are checked
against the member epoch, and they are listed, described and deleted beside classic ones.
"""

from __future__ import annotations

import copy
import logging
from typing import Callable, Iterable, Mapping, Protocol, Sequence

import trio

from broker.apis.authorization import ALLOW_ALL, AclOperation, Authorization, ResourceType
from broker.apis.common import ITEMS_PER_SLICE
from broker.apis.consumer_groups import cluster_topics, persist, serve
from broker.apis.request import DecodedRequest, ErrorBody, RequestContext, RequestRouter
from broker.coordinator.partitions import CoordinatorLocation
from broker.group.consumer.manager import ConsumerGroupManager
from broker.group.consumer.model import CONSUMER_GROUP_PROTOCOL_TYPE
from broker.group.consumer.model import ConsumerGroupState
from broker.group.coordinator import GroupCoordinator
from broker.group.offsets import (
    FetchedTopic,
    RequestedTopic,
    failed_topics,
    fetch_slices,
    join_topics,
)
from broker.group.responses import join_body, sync_body
from clients.clock import wall_clock_ms
from clients.protocol import ApiKey, ErrorCode
from clients.protocol.messages.delete_groups import (
    DeleteGroupsRequestData,
    DeleteGroupsResponseData,
)
from clients.protocol.messages.describe_groups import (
    DescribeGroupsRequestData,
    DescribeGroupsResponseData,
)
from clients.protocol.messages.find_coordinator import (
    FindCoordinatorRequestData,
    FindCoordinatorResponseData,
)
from clients.protocol.messages.heartbeat import HeartbeatRequestData, HeartbeatResponseData
from clients.protocol.messages.join_group import JoinGroupRequestData, JoinGroupResponseData
from clients.protocol.messages.leave_group import LeaveGroupRequestData, LeaveGroupResponseData
from clients.protocol.messages.list_groups import ListGroupsRequestData, ListGroupsResponseData
from clients.protocol.messages.offset_commit import (
    OffsetCommitRequestData,
    OffsetCommitResponseData,
)
from clients.protocol.messages.offset_delete import (
    OffsetDeleteRequestData,
    OffsetDeleteResponseData,
)
from clients.protocol.messages.offset_fetch import OffsetFetchRequestData, OffsetFetchResponseData
from clients.protocol.messages.sync_group import SyncGroupRequestData, SyncGroupResponseData
from metadata.image import MetadataImage

logger = logging.getLogger(__name__)

DescribedGroup = DescribeGroupsResponseData.DescribedGroup
DeletableGroupResult = DeleteGroupsResponseData.DeletableGroupResult
ListedGroup = ListGroupsResponseData.ListedGroup

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
TRANSACTIONS_UNSUPPORTED = ("this broker does not support transactions (no transaction "
                            "coordinator runs without a controller): a producer with a "
                            "transactional.id cannot start")


class TransactionCoordinatorFinder(Protocol):
    """Answers FindCoordinator for transactional ids (key type 1)."""

    def find_coordinator(self, key: str, listener_name: str) -> CoordinatorLocation: ...


def client_host(ctx: RequestContext) -> str:
    """Kafka reports the peer address as Java's InetAddress.toString does: "/host"."""
    return f"/{ctx.peer[0]}"


class GroupHandlers:
    """Registers the group APIs on a broker router, answering from `coordinator`."""

    def __init__(self, coordinator: GroupCoordinator,
                 image: Callable[[], MetadataImage] | None = None,
                 transactions: TransactionCoordinatorFinder | None = None,
                 authz: Authorization = ALLOW_ALL,
                 consumer_groups: ConsumerGroupManager | None = None) -> None:
        self.coordinator = coordinator
        self._consumer_groups = consumer_groups
        self._image = image
        self._transactions = transactions
        self._authz = authz

    def _consumer_group(self, group_id: str) -> bool:
        """Whether `group_id` is a consumer-type (KIP-848) group of this coordinator."""
        if self._consumer_groups is None:
            return False
        serve(self.coordinator, self._consumer_groups, group_id, wall_clock_ms())
        return group_id in self._consumer_groups.groups

    async def _persist_consumer_groups(self) -> None:
        if self._consumer_groups is not None:
            await persist(self.coordinator, self._consumer_groups)

    def _group_allowed(self, ctx: RequestContext, operation: AclOperation, group_id: str) -> bool:
        return self._authz.allowed(ctx, operation, ResourceType.GROUP, group_id)

    def _group_error(self, ctx: RequestContext, operation: AclOperation, group_id: str) -> int:
        """GROUP_AUTHORIZATION_FAILED, else the coordinator's error for the group: as in
        Kafka, an unauthorized principal learns nothing of the coordinator's state."""
        if not self._group_allowed(ctx, operation, group_id):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED
        return self.coordinator.coordinator_error(group_id)

    def _topics_allowed(self, ctx: RequestContext, operation: AclOperation,
                        names: Iterable[str]) -> set[str]:
        return self._authz.allowed_names(ctx, operation, ResourceType.TOPIC, names)

    async def _fetch_offsets(self, ctx: RequestContext, group_id: str,
                             topics: Sequence[RequestedTopic] | None,
                             stable: bool) -> list[FetchedTopic]:
        """Committed offsets of the topics the principal may describe: asked-for topics it
        may not get TOPIC_AUTHORIZATION_FAILED; when all are asked for, they are left out."""
        engine = self.coordinator.engine
        if topics is None:
            fetched = engine.fetch(group_id, None, stable)
            if not self._authz.enabled:
                return fetched
            visible = self._topics_allowed(ctx, AclOperation.DESCRIBE,
                                           (t.name for t in fetched))
            return [t for t in fetched if t.name in visible]
        visible = self._topics_allowed(ctx, AclOperation.DESCRIBE, (t.name for t in topics))
        allowed = [t for t in topics if t.name in visible]
        denied = [t for t in topics if t.name not in visible]
        fetched = await self._fetch_in_slices(group_id, allowed, stable) if (
            allowed or not denied) else []
        return fetched + failed_topics(denied, ErrorCode.TOPIC_AUTHORIZATION_FAILED)

    async def _fetch_in_slices(self, group_id: str, topics: Sequence[RequestedTopic],
                               stable: bool) -> list[FetchedTopic]:
        """The committed offsets of `topics`, a slice of partitions at a time with the other
        connections served in between. A request of more than one slice may see a commit
        that lands meanwhile in some partitions only; consumers ask for far fewer."""
        engine = self.coordinator.engine
        slices = fetch_slices(topics, ITEMS_PER_SLICE)
        if len(slices) <= 1:
            return engine.fetch(group_id, topics, stable)
        fetched: list[FetchedTopic] = []
        for part in slices:
            fetched += engine.fetch(group_id, part, stable)
            await trio.lowlevel.checkpoint()
        return join_topics(fetched)

    def register(self, router: RequestRouter) -> None:
        for api_key, handler in (
                (ApiKey.FIND_COORDINATOR, self.find_coordinator),
                (ApiKey.JOIN_GROUP, self.join_group),
                (ApiKey.SYNC_GROUP, self.sync_group),
                (ApiKey.HEARTBEAT, self.heartbeat),
                (ApiKey.LEAVE_GROUP, self.leave_group),
                (ApiKey.OFFSET_COMMIT, self.offset_commit),
                (ApiKey.OFFSET_FETCH, self.offset_fetch),
                (ApiKey.LIST_GROUPS, self.list_groups),
                (ApiKey.DESCRIBE_GROUPS, self.describe_groups),
                (ApiKey.DELETE_GROUPS, self.delete_groups),
                (ApiKey.OFFSET_DELETE, self.offset_delete)):
            router.register(api_key, handler, GROUP_ERRORS[api_key])

    def _topic_exists(self, topic: str) -> bool:
        return self._image is None or self._image().topic(topic) is not None

    def _partition_exists(self, topic: str, partition: int) -> bool:
        if self._image is None:
            return True
        found = self._image().topic(topic)
        return found is not None and partition in found.partitions

    # -- coordinator discovery -----------------------------------------------------------

    async def find_coordinator(self, request: DecodedRequest,
                               ctx: RequestContext) -> FindCoordinatorResponseData:
        body: FindCoordinatorRequestData = request.body
        version = request.api_version
        keys = list(body.coordinator_keys) if version >= 4 else [body.key]
        found = [self._coordinator_for(key, body.key_type, ctx.listener_name, ctx)
                 for key in keys]
        if version >= 4:
            return FindCoordinatorResponseData(coordinators=[
                FindCoordinatorResponseData.Coordinator(
                    key=key, node_id=entry.node_id, host=entry.host, port=entry.port,
                    error_code=entry.error_code, error_message=entry.error_message)
                for key, entry in zip(keys, found)])
        entry = found[0]
        return FindCoordinatorResponseData(
            error_code=entry.error_code, error_message=entry.error_message,
            node_id=entry.node_id, host=entry.host, port=entry.port)

    def _coordinator_for(self, key: str, key_type: int, listener: str,
                         ctx: RequestContext) -> CoordinatorLocation:
        if key_type == GROUP_KEY_TYPE and not self._group_allowed(ctx, AclOperation.DESCRIBE, key):
            return CoordinatorLocation.failed(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        if key_type == TRANSACTION_KEY_TYPE and not self._authz.allowed(
                ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
            return CoordinatorLocation.failed(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if key_type == GROUP_KEY_TYPE:
            return self.coordinator.find_coordinator(key, listener)
        if key_type == TRANSACTION_KEY_TYPE and self._transactions is not None:
            return self._transactions.find_coordinator(key, listener)
        if key_type == TRANSACTION_KEY_TYPE:
            # No transaction coordinator on this broker. A retriable code (COORDINATOR_NOT_AVAILABLE)
            # makes clients retry until init_transactions times out; this one is fatal in
            # librdkafka and the Java client, which fail at once and show the message.
            code, message = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, TRANSACTIONS_UNSUPPORTED
        else:
            code, message = ErrorCode.INVALID_REQUEST, f"unknown key type {key_type}"
        return CoordinatorLocation.failed(code, message)

    # -- membership ----------------------------------------------------------------------

    async def join_group(self, request: DecodedRequest,
                         ctx: RequestContext) -> JoinGroupResponseData:
        body: JoinGroupRequestData = request.body
        version = request.api_version
        code = self._group_error(ctx, AclOperation.READ, body.group_id)
        if code:
            return join_group_error(body, version, code)
        if self._consumer_group(body.group_id):
            assert self._consumer_groups is not None
            if self._consumer_groups.groups[body.group_id].members:
                # Kafka lets classic members into a consumer group only under its migration
                # policy, which Raftka does not have.
                return join_group_error(body, version, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            self._consumer_groups.drop(body.group_id)  # empty: it becomes classic
            await self._persist_consumer_groups()
        response = await self.coordinator.join_group(
            body, client_id=request.client_id or "", client_host=client_host(ctx),
            require_known_member_id=version >= 4)
        return _join_for_version(response, version)

    async def sync_group(self, request: DecodedRequest,
                         ctx: RequestContext) -> SyncGroupResponseData:
        body: SyncGroupRequestData = request.body
        code = self._group_error(ctx, AclOperation.READ, body.group_id)
        if code:
            return sync_group_error(body, request.api_version, code)
        return await self.coordinator.sync_group(body)

    async def heartbeat(self, request: DecodedRequest,
                        ctx: RequestContext) -> HeartbeatResponseData:
        body: HeartbeatRequestData = request.body
        code = self._group_error(ctx, AclOperation.READ, body.group_id)
        if not code:
            code = self.coordinator.heartbeat(body)
        return HeartbeatResponseData(error_code=int(code))

    async def leave_group(self, request: DecodedRequest,
                          ctx: RequestContext) -> LeaveGroupResponseData:
        body: LeaveGroupRequestData = request.body
        version = request.api_version
        if version < 3:
            leaving: list[tuple[str, str | None]] = [(body.member_id, None)]
        else:
            leaving = [(m.member_id, m.group_instance_id) for m in body.members]
        top = self._group_error(ctx, AclOperation.READ, body.group_id)
        codes: list[int] = []
        if not top:
            top, codes = self.coordinator.leave_group(body.group_id, leaving)
        if version < 3:
            # v0-2 have one member and only the top-level code.
            if not top and codes:
                top = codes[0]
            return LeaveGroupResponseData(error_code=int(top))
        return LeaveGroupResponseData(error_code=int(top), members=[
            LeaveGroupResponseData.MemberResponse(
                member_id=member_id, group_instance_id=instance_id, error_code=int(c))
            for (member_id, instance_id), c in zip(leaving, codes)])

    # -- offsets -------------------------------------------------------------------------

    async def offset_commit(self, request: DecodedRequest,
                            ctx: RequestContext) -> OffsetCommitResponseData:
        body: OffsetCommitRequestData = request.body
        code = self._group_error(ctx, AclOperation.READ, body.group_id)
        if not code and self._consumer_group(body.group_id):
            assert self._consumer_groups is not None
            code = self._consumer_groups.validate_commit(
                body.group_id, body.member_id, body.generation_id_or_member_epoch,
                request.api_version)
            # The member was checked against its epoch; the offsets land as a simple commit.
            body = copy.copy(body)
            body.generation_id_or_member_epoch, body.member_id = -1, ""
            body.group_instance_id = None
        if code:
            return offset_commit_error(body, request.api_version, code)
        readable = self._topics_allowed(ctx, AclOperation.READ, (t.name for t in body.topics))
        denied = [t for t in body.topics if t.name not in readable]
        codes = {}
        if denied:
            body = copy.copy(body)
            body.topics = [t for t in body.topics if t.name in readable]
        if body.topics or not denied:
            codes = dict((await self.coordinator.commit_offsets(body, self._topic_exists)).codes)
        codes.update(((t.name, p.partition_index), ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                     for t in denied for p in t.partitions)
        return _offset_commit_response(codes)

    async def offset_fetch(self, request: DecodedRequest,
                           ctx: RequestContext) -> OffsetFetchResponseData:
        body: OffsetFetchRequestData = request.body
        version = request.api_version
        stable = body.require_stable
        if version >= 8:
            groups = []
            for group in body.groups:
                code = self._group_error(ctx, AclOperation.DESCRIBE, group.group_id)
                if not code and self._consumer_group(group.group_id):
                    assert self._consumer_groups is not None
                    code = self._consumer_groups.validate_fetch(
                        group.group_id, group.member_id, group.member_epoch)
                topics = [] if code else await self._fetch_offsets(
                    ctx, group.group_id, group.topics, stable)
                groups.append(OffsetFetchResponseData.OffsetFetchResponseGroup(
                    group_id=group.group_id, topics=_fetched_topics_v8(topics),
                    error_code=int(code)))
            return OffsetFetchResponseData(groups=groups)
        code = self._group_error(ctx, AclOperation.DESCRIBE, body.group_id)
        if not code:
            topics = await self._fetch_offsets(ctx, body.group_id, body.topics, stable)
            return OffsetFetchResponseData(topics=_fetched_topics(topics))
        if version >= 2:
            return OffsetFetchResponseData(error_code=int(code))
        return offset_fetch_error(body, version, int(code))

    # -- administration ------------------------------------------------------------------

    async def list_groups(self, request: DecodedRequest,
                          ctx: RequestContext) -> ListGroupsResponseData:
        body: ListGroupsRequestData = request.body
        states = body.states_filter
        code = (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self.coordinator.is_loading
                else ErrorCode.NONE)
        groups = self.coordinator.engine.list_groups(states)
        if self._consumer_groups is not None:
            groups = self._with_consumer_groups(groups, states)
            await self._persist_consumer_groups()
        if not self._authz.cluster(ctx, AclOperation.DESCRIBE):
            visible = self._authz.allowed_names(ctx, AclOperation.DESCRIBE, ResourceType.GROUP,
                                                (g.group_id for g in groups))
            groups = [g for g in groups if g.group_id in visible]
        return ListGroupsResponseData(error_code=int(code), groups=groups)

    def _with_consumer_groups(self, listed: list[ListedGroup],
                              states: Iterable[str]) -> list[ListedGroup]:
        """ListGroups entries with consumer groups as Kafka lists them (protocol type
        "consumer", their own states) in place of the offsets they share an id with."""
        assert self._consumer_groups is not None
        serve(self.coordinator, self._consumer_groups, "", wall_clock_ms())
        if self._image is not None:
            self._consumer_groups.expire(wall_clock_ms(), cluster_topics(self._image()))
        served = {g: group for g, group in self._consumer_groups.groups.items()
                  if self.coordinator.coordinator_error(g) == ErrorCode.NONE}
        wanted = {s.lower() for s in states}
        out = [g for g in listed if g.group_id not in served]
        for group_id, group in served.items():
            state = group.state().value
            if not wanted or state.lower() in wanted:
                out.append(ListedGroup(group_id=group_id,
                                       protocol_type=CONSUMER_GROUP_PROTOCOL_TYPE,
                                       group_state=state))
        return out

    async def describe_groups(self, request: DecodedRequest,
                              ctx: RequestContext) -> DescribeGroupsResponseData:
        body: DescribeGroupsRequestData = request.body
        described = []
        for group_id in body.groups:
            code = self._group_error(ctx, AclOperation.DESCRIBE, group_id)
            if code:
                described.append(_described_error(group_id, int(code)))
                continue
            if self._consumer_group(group_id):
                # Kafka's DescribeGroups (v0-5) finds no classic group: reported Dead.
                described.append(DescribedGroup(group_id=group_id,
                                                group_state=ConsumerGroupState.DEAD.value))
                continue
            entry = self.coordinator.engine.describe(group_id)
            if body.include_authorized_operations:
                entry.authorized_operations = self._authz.operations(
                    ctx, ResourceType.GROUP, group_id)
            described.append(entry)
        return DescribeGroupsResponseData(groups=described)

    async def delete_groups(self, request: DecodedRequest,
                            ctx: RequestContext) -> DeleteGroupsResponseData:
        body: DeleteGroupsRequestData = request.body
        results = []
        for group_id in body.groups_names:
            code = self._group_error(ctx, AclOperation.DELETE, group_id)
            if not code and self._consumer_group(group_id):
                assert self._consumer_groups is not None
                code = self._consumer_groups.delete(group_id)
                await self._persist_consumer_groups()
                if not code and group_id not in self.coordinator.engine.groups:
                    results.append(DeletableGroupResult(group_id=group_id))
                    continue
            if not code:
                code = await self.coordinator.delete_group(group_id)
            results.append(DeletableGroupResult(group_id=group_id, error_code=int(code)))
        return DeleteGroupsResponseData(results=results)

    async def offset_delete(self, request: DecodedRequest,
                            ctx: RequestContext) -> OffsetDeleteResponseData:
        body: OffsetDeleteRequestData = request.body
        version = request.api_version
        group_id = body.group_id
        code = self._group_error(ctx, AclOperation.DELETE, group_id)
        readable = self._topics_allowed(ctx, AclOperation.READ, (t.name for t in body.topics))
        named = [(t.name, p.partition_index) for t in body.topics
                 if t.name in readable for p in t.partitions]
        # As Kafka: a partition the metadata does not know is answered, not passed on.
        unknown = {tp for tp in named if not self._partition_exists(*tp)}
        # A consumer group keeps the offsets of topics its members subscribe to, as Kafka.
        subscribed = ({tp for tp in named
                       if tp[0] in self._consumer_groups.groups[group_id].subscription_metadata}
                      if self._consumer_group(group_id) and self._consumer_groups is not None
                      and self._consumer_groups.groups[group_id].members else set())
        partitions = [tp for tp in named if tp not in unknown and tp not in subscribed]
        if not code:
            code, codes = await self.coordinator.delete_offsets(group_id, partitions)
        if code:
            return offset_delete_error(body, version, int(code))
        codes = dict(codes)
        codes.update((tp, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) for tp in unknown)
        codes.update((tp, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC) for tp in subscribed)
        codes.update(((t.name, p.partition_index), ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                     for t in body.topics if t.name not in readable for p in t.partitions)
        topics: dict[str, list[OffsetDeleteResponseData.OffsetDeleteResponsePartition]] = {}
        for (topic, partition), c in codes.items():
            topics.setdefault(topic, []).append(
                OffsetDeleteResponseData.OffsetDeleteResponsePartition(
                    partition_index=partition, error_code=int(c)))
        return OffsetDeleteResponseData(topics=[
            OffsetDeleteResponseData.OffsetDeleteResponseTopic(name=name, partitions=parts)
            for name, parts in topics.items()])


# -- error answers ---------------------------------------------------------------------------


def _join_for_version(response: JoinGroupResponseData, version: int) -> JoinGroupResponseData:
    """The coordinator's JoinGroup answer (this request's own copy) made fit for `version`:
    the protocol name is not nullable before v7, and only v9 has skip_assignment."""
    if version < 7 and response.protocol_name is None:
        response.protocol_name = ""
    if version < 9:
        response.skip_assignment = False
    return response


def find_coordinator_error(body: FindCoordinatorRequestData, version: int, code: int,
                           message: str | None = None) -> FindCoordinatorResponseData:
    if version < 4:
        return FindCoordinatorResponseData(error_code=code, error_message=message, node_id=-1,
                                           host="", port=-1)
    return FindCoordinatorResponseData(coordinators=[
        FindCoordinatorResponseData.Coordinator(key=key, node_id=-1, host="", port=-1,
                                                error_code=code, error_message=message)
        for key in body.coordinator_keys])


def join_group_error(body: JoinGroupRequestData, version: int, code: int,
                     message: str | None = None) -> JoinGroupResponseData:
    return _join_for_version(join_body(code, body.member_id), version)


def sync_group_error(body: SyncGroupRequestData, version: int, code: int,
                     message: str | None = None) -> SyncGroupResponseData:
    return sync_body(code)


def heartbeat_error(body: HeartbeatRequestData, version: int, code: int,
                    message: str | None = None) -> HeartbeatResponseData:
    return HeartbeatResponseData(error_code=code)


def leave_group_error(body: LeaveGroupRequestData, version: int, code: int,
                      message: str | None = None) -> LeaveGroupResponseData:
    return LeaveGroupResponseData(error_code=code)


def list_groups_error(body: ListGroupsRequestData, version: int, code: int,
                      message: str | None = None) -> ListGroupsResponseData:
    return ListGroupsResponseData(error_code=code)


def _described_error(group_id: str, code: int) -> DescribedGroup:
    return DescribedGroup(error_code=code, group_id=group_id)


def describe_groups_error(body: DescribeGroupsRequestData, version: int, code: int,
                          message: str | None = None) -> DescribeGroupsResponseData:
    return DescribeGroupsResponseData(
        groups=[_described_error(group, code) for group in body.groups])


def delete_groups_error(body: DeleteGroupsRequestData, version: int, code: int,
                        message: str | None = None) -> DeleteGroupsResponseData:
    return DeleteGroupsResponseData(results=[
        DeletableGroupResult(group_id=group, error_code=code) for group in body.groups_names])


def _offset_commit_response(codes: Mapping[tuple[str, int], int]) -> OffsetCommitResponseData:
    """OffsetCommit's answer: each partition's code, by topic."""
    topics: dict[str, list[OffsetCommitResponseData.OffsetCommitResponsePartition]] = {}
    for (topic, partition), code in codes.items():
        topics.setdefault(topic, []).append(
            OffsetCommitResponseData.OffsetCommitResponsePartition(
                partition_index=partition, error_code=int(code)))
    return OffsetCommitResponseData(topics=[
        OffsetCommitResponseData.OffsetCommitResponseTopic(name=name, partitions=parts)
        for name, parts in topics.items()])


def offset_commit_error(body: OffsetCommitRequestData, version: int, code: int,
                        message: str | None = None) -> OffsetCommitResponseData:
    return _offset_commit_response({(t.name, p.partition_index): code
                                    for t in body.topics for p in t.partitions})


def _fetched_topics(topics: Iterable[FetchedTopic]
                    ) -> list[OffsetFetchResponseData.OffsetFetchResponseTopic]:
    """Committed offsets by topic, as OffsetFetch v0-7 answers them."""
    return [OffsetFetchResponseData.OffsetFetchResponseTopic(name=t.name, partitions=[
        OffsetFetchResponseData.OffsetFetchResponsePartition(
            partition_index=p.partition, committed_offset=p.committed_offset,
            committed_leader_epoch=p.committed_leader_epoch, metadata=p.metadata,
            error_code=p.error_code) for p in t.partitions]) for t in topics]


def _fetched_topics_v8(topics: Iterable[FetchedTopic]
                       ) -> list[OffsetFetchResponseData.OffsetFetchResponseTopics]:
    """Committed offsets by topic, as OffsetFetch v8+ answers them for a group."""
    return [OffsetFetchResponseData.OffsetFetchResponseTopics(name=t.name, partitions=[
        OffsetFetchResponseData.OffsetFetchResponsePartitions(
            partition_index=p.partition, committed_offset=p.committed_offset,
            committed_leader_epoch=p.committed_leader_epoch, metadata=p.metadata,
            error_code=p.error_code) for p in t.partitions]) for t in topics]


def offset_fetch_error(body: OffsetFetchRequestData, version: int, code: int,
                       message: str | None = None) -> OffsetFetchResponseData:
    if version >= 8:
        return OffsetFetchResponseData(groups=[
            OffsetFetchResponseData.OffsetFetchResponseGroup(
                group_id=g.group_id, error_code=code,
                topics=_fetched_topics_v8(failed_topics(g.topics, code)))
            for g in body.groups])
    # v2+ clients read the top-level code; v1 only has the per-partition ones.
    return OffsetFetchResponseData(
        error_code=code, topics=_fetched_topics(failed_topics(body.topics, code)))


def offset_delete_error(body: OffsetDeleteRequestData, version: int, code: int,
                        message: str | None = None) -> OffsetDeleteResponseData:
    """A group-wide error: the top-level code and no partitions, as Kafka answers."""
    return OffsetDeleteResponseData(error_code=code)


GROUP_ERRORS: dict[int, ErrorBody] = {
    ApiKey.FIND_COORDINATOR: find_coordinator_error,
    ApiKey.JOIN_GROUP: join_group_error,
    ApiKey.SYNC_GROUP: sync_group_error,
    ApiKey.HEARTBEAT: heartbeat_error,
    ApiKey.LEAVE_GROUP: leave_group_error,
    ApiKey.LIST_GROUPS: list_groups_error,
    ApiKey.DESCRIBE_GROUPS: describe_groups_error,
    ApiKey.DELETE_GROUPS: delete_groups_error,
    ApiKey.OFFSET_COMMIT: offset_commit_error,
    ApiKey.OFFSET_FETCH: offset_fetch_error,
    ApiKey.OFFSET_DELETE: offset_delete_error,
}
