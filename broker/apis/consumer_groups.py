"""ConsumerGroupHeartbeat v0-1 and ConsumerGroupDescribe v0 (KIP-848) on the wire, served by
the coordinator of the group's `__consumer_offsets` partition. A change to a group is
written to that partition before the heartbeat that made it is answered."""

from __future__ import annotations

from typing import Callable

import trio

from broker.apis.authorization import ALLOW_ALL, AclOperation, Authorization, ResourceType
from broker.apis.request import DecodedRequest, ErrorBody, RequestContext, RequestRouter
from broker.group.consumer.manager import ConsumerGroupManager, error_body
from broker.group.consumer.model import Assignment, ConsumerGroup, TopicMetadata
from broker.group.coordinator import GroupCoordinator
from broker.group.model import GroupWrite
from broker.group.offsets import commit_error
from broker.group.records import ConsumerGroupKey, ConsumerGroupValue
from broker.parking import parked
from clients.clock import wall_clock_ms
from clients.protocol import ApiKey, ErrorCode
from clients.protocol.messages.consumer_group_describe import (
    ConsumerGroupDescribeRequestData,
    ConsumerGroupDescribeResponseData,
)
from clients.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequestData,
    ConsumerGroupHeartbeatResponseData,
)
from metadata.image import MetadataImage

Described = ConsumerGroupDescribeResponseData

# How often sessions are checked between requests: timeouts are seconds long.
EXPIRY_CHECK_INTERVAL_S = 0.5
UNSUPPORTED_MESSAGE = ("The new consumer group protocol is not enabled on this broker "
                       "(group.coordinator.rebalance.protocols lacks \"consumer\").")


async def persist(coordinator: GroupCoordinator, manager: ConsumerGroupManager
                  ) -> dict[str, int]:
    """Write every consumer group whose stored state is out of date; the error code of
    each group whose write failed."""
    submitted = []
    for group_id, partition, state in manager.pending_writes():
        value = None if state is None else ConsumerGroupValue(state)
        write = GroupWrite(partition, [(ConsumerGroupKey(group_id), value)])
        submitted.append((group_id, coordinator.submit(write)))
    failed: dict[str, int] = {}
    if submitted:
        parked()  # the writes wait for their replication
    for group_id, item in submitted:
        await item.done.wait()
        if item.code:
            manager.unwritten(group_id)
            failed[group_id] = commit_error(item.code)
    return failed


def serve(coordinator: GroupCoordinator, manager: ConsumerGroupManager, group_id: str,
          now_ms: int) -> int:
    """Bring `manager` in line with the partitions `coordinator` serves (dropping groups
    that moved away, adopting those a load found); the coordinator error of `group_id`."""
    manager.forget(lambda g: coordinator.coordinator_error(g) == ErrorCode.NONE)
    manager.adopt(coordinator.engine.loaded_consumer_groups, now_ms)
    return coordinator.coordinator_error(group_id)


def cluster_topics(image: MetadataImage) -> TopicMetadata:
    return {name: (topic.topic_id, topic.partition_count())
            for name, topic in image.topics_by_name.items()}


class ConsumerGroupHandlers:
    """Registers the consumer group protocol's APIs, answering from `manager`."""

    def __init__(self, coordinator: GroupCoordinator, manager: ConsumerGroupManager,
                 image: Callable[[], MetadataImage], authz: Authorization = ALLOW_ALL,
                 clock: Callable[[], int] = wall_clock_ms) -> None:
        self.coordinator = coordinator
        self.manager = manager
        self._image = image
        self._authz = authz
        self._clock = clock

    def register(self, router: RequestRouter) -> None:
        self.coordinator.background.append(self.expire_sessions)
        router.register(ApiKey.CONSUMER_GROUP_HEARTBEAT, self.heartbeat,
                        CONSUMER_GROUP_ERRORS[ApiKey.CONSUMER_GROUP_HEARTBEAT])
        router.register(ApiKey.CONSUMER_GROUP_DESCRIBE, self.describe,
                        CONSUMER_GROUP_ERRORS[ApiKey.CONSUMER_GROUP_DESCRIBE])

    async def expire_sessions(self) -> None:
        """Fence members past their session or rebalance timeout even when no request
        reaches the coordinator (a group whose only member died), as Kafka's per-member
        timers do; the change is written like any other."""
        while True:
            await trio.sleep(EXPIRY_CHECK_INTERVAL_S)
            if not self.manager.groups:
                continue
            self.manager.forget(
                lambda g: self.coordinator.coordinator_error(g) == ErrorCode.NONE)
            if self.manager.expire(self._clock(), cluster_topics(self._image())):
                await persist(self.coordinator, self.manager)

    def _served(self, group_id: str) -> int:
        return serve(self.coordinator, self.manager, group_id, self._clock())

    async def heartbeat(self, request: DecodedRequest,
                        ctx: RequestContext) -> ConsumerGroupHeartbeatResponseData:
        body: ConsumerGroupHeartbeatRequestData = request.body
        group_id = body.group_id
        if not self.manager.settings.enabled:
            return error_body(ErrorCode.UNSUPPORTED_VERSION, UNSUPPORTED_MESSAGE)
        if not self._authz.allowed(ctx, AclOperation.READ, ResourceType.GROUP, group_id):
            return error_body(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        names = set(body.subscribed_topic_names or ())
        denied = names - self._authz.allowed_names(ctx, AclOperation.DESCRIBE,
                                                   ResourceType.TOPIC, names)
        if denied:
            # As Kafka: a subscription naming a topic the member may not describe is refused.
            return error_body(ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                              f"Unauthorized topics: {', '.join(sorted(denied))}")
        code = self._served(group_id)
        if code:
            return error_body(code)
        classic = self.coordinator.engine.groups.get(group_id)
        response = self.manager.heartbeat(
            body, request.api_version, client_id=request.client_id or "",
            client_host=f"/{ctx.peer[0]}", topics=cluster_topics(self._image()),
            classic_has_members=classic is not None and bool(classic.members),
            now_ms=self._clock())
        failed = await persist(self.coordinator, self.manager)
        if group_id in failed:
            return error_body(failed[group_id])
        return response

    async def describe(self, request: DecodedRequest,
                       ctx: RequestContext) -> ConsumerGroupDescribeResponseData:
        body: ConsumerGroupDescribeRequestData = request.body
        image = self._image()
        self.manager.expire(self._clock(), cluster_topics(image))
        await persist(self.coordinator, self.manager)
        described = []
        for group_id in body.group_ids:
            if not self._authz.allowed(ctx, AclOperation.DESCRIBE, ResourceType.GROUP,
                                       group_id):
                described.append(_described_error(group_id,
                                                  ErrorCode.GROUP_AUTHORIZATION_FAILED))
                continue
            code = self._served(group_id)
            group = self.manager.groups.get(group_id)
            if not code and group is None:
                code = ErrorCode.GROUP_ID_NOT_FOUND
                message = (f"Group {group_id} is not a consumer group."
                           if group_id in self.coordinator.engine.groups
                           else f"Group {group_id} not found.")
                described.append(_described_error(group_id, code, message))
                continue
            if code or group is None:
                described.append(_described_error(group_id, code))
                continue
            entry = describe_group(group, image)
            names = {t.topic_name for m in entry.members
                     for a in (m.assignment, m.target_assignment) for t in a.topic_partitions}
            names.update(n for m in entry.members for n in m.subscribed_topic_names)
            if self._authz.allowed_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                         names) != names:
                described.append(_described_error(
                    group_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    "The group has described topic(s) that the client is not authorized "
                    "to describe."))
                continue
            if body.include_authorized_operations:
                entry.authorized_operations = self._authz.operations(
                    ctx, ResourceType.GROUP, group_id)
            described.append(entry)
        return ConsumerGroupDescribeResponseData(groups=described)


def _described_assignment(assignment: Assignment,
                          image: MetadataImage) -> Described.Assignment:
    parts = []
    for topic_id, partitions in sorted(assignment.items(), key=lambda i: str(i[0])):
        topic = image.topic_by_id(topic_id)
        parts.append(Described.TopicPartitions(
            topic_id=topic_id, topic_name=topic.name if topic else "",
            partitions=sorted(partitions)))
    return Described.Assignment(topic_partitions=parts)


def describe_group(group: ConsumerGroup, image: MetadataImage) -> Described.DescribedGroup:
    """One ConsumerGroupDescribe entry."""
    return Described.DescribedGroup(
        group_id=group.group_id, group_state=group.state().value,
        group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
        assignor_name=group.assignor_name,
        members=[Described.Member(
            member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
            member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
            subscribed_topic_names=list(m.subscribed_topic_names),
            subscribed_topic_regex=m.subscribed_topic_regex,
            assignment=_described_assignment(m.assigned, image),
            target_assignment=_described_assignment(group.target.get(m.member_id, {}), image))
            for m in group.members.values()])


def _described_error(group_id: str, code: int,
                     message: str | None = None) -> Described.DescribedGroup:
    return Described.DescribedGroup(error_code=int(code), error_message=message,
                                    group_id=group_id, group_epoch=-1, assignment_epoch=-1)


def heartbeat_error(body: ConsumerGroupHeartbeatRequestData, version: int, code: int,
                    message: str | None = None) -> ConsumerGroupHeartbeatResponseData:
    return error_body(code, message)


def describe_error(body: ConsumerGroupDescribeRequestData, version: int, code: int,
                   message: str | None = None) -> ConsumerGroupDescribeResponseData:
    return ConsumerGroupDescribeResponseData(groups=[
        _described_error(g, code, message) for g in body.group_ids])


CONSUMER_GROUP_ERRORS: dict[int, ErrorBody] = {
    ApiKey.CONSUMER_GROUP_HEARTBEAT: heartbeat_error,
    ApiKey.CONSUMER_GROUP_DESCRIBE: describe_error,
}
