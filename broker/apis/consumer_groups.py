"""ConsumerGroupHeartbeat v0-1 and ConsumerGroupDescribe v0 (KIP-848) on the wire, served by
the coordinator of the group's `__consumer_offsets` partition."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from broker.apis.authorization import ALLOW_ALL, AclOperation, Authorization, ResourceType
from broker.apis.request import DecodedRequest, ErrorBody, RequestContext, RequestRouter
from broker.group.consumer.manager import ConsumerGroupManager, error_body
from broker.group.consumer.model import Assignment, ConsumerGroup, TopicMetadata
from broker.group.coordinator import GroupCoordinator, wall_clock_ms
from clients.protocol import ApiKey, ErrorCode
from metadata.image import MetadataImage

UNSUPPORTED_MESSAGE = ("The new consumer group protocol is not enabled on this broker "
                       "(group.coordinator.rebalance.protocols lacks \"consumer\").")


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
        router.register(ApiKey.CONSUMER_GROUP_HEARTBEAT, self.heartbeat,
                        CONSUMER_GROUP_ERRORS[ApiKey.CONSUMER_GROUP_HEARTBEAT])
        router.register(ApiKey.CONSUMER_GROUP_DESCRIBE, self.describe,
                        CONSUMER_GROUP_ERRORS[ApiKey.CONSUMER_GROUP_DESCRIBE])

    def _served(self, group_id: str) -> int:
        self.manager.forget(lambda g: self.coordinator.coordinator_error(g) == ErrorCode.NONE)
        return self.coordinator.coordinator_error(group_id)

    async def heartbeat(self, request: DecodedRequest, ctx: RequestContext) -> dict:
        body = request.body
        group_id = body.get("group_id") or ""
        if not self.manager.settings.enabled:
            return error_body(ErrorCode.UNSUPPORTED_VERSION, UNSUPPORTED_MESSAGE)
        if not self._authz.allowed(ctx, AclOperation.READ, ResourceType.GROUP, group_id):
            return error_body(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        code = self._served(group_id)
        if code:
            return error_body(code)
        classic = self.coordinator.engine.groups.get(group_id)
        return self.manager.heartbeat(
            body, request.api_version, client_id=request.client_id or "",
            client_host=f"/{ctx.peer[0]}", topics=cluster_topics(self._image()),
            classic_has_members=classic is not None and bool(classic.members),
            now_ms=self._clock())

    async def describe(self, request: DecodedRequest, ctx: RequestContext) -> dict:
        include_operations = bool(request.body.get("include_authorized_operations"))
        image = self._image()
        self.manager.expire(self._clock(), cluster_topics(image))
        described = []
        for group_id in request.body.get("group_ids") or ():
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
            names = {t["topic_name"] for m in entry["members"]
                     for a in (m["assignment"], m["target_assignment"])
                     for t in a["topic_partitions"]}
            names.update(n for m in entry["members"] for n in m["subscribed_topic_names"])
            if self._authz.allowed_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                         names) != names:
                described.append(_described_error(
                    group_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    "The group has described topic(s) that the client is not authorized "
                    "to describe."))
                continue
            if include_operations:
                entry["authorized_operations"] = self._authz.operations(
                    ctx, ResourceType.GROUP, group_id)
            described.append(entry)
        return {"throttle_time_ms": 0, "groups": described}


def _described_assignment(assignment: Assignment, image: MetadataImage) -> dict[str, Any]:
    parts = []
    for topic_id, partitions in sorted(assignment.items(), key=lambda i: str(i[0])):
        topic = image.topic_by_id(topic_id)
        parts.append({"topic_id": topic_id, "topic_name": topic.name if topic else "",
                      "partitions": sorted(partitions)})
    return {"topic_partitions": parts}


def describe_group(group: ConsumerGroup, image: MetadataImage) -> dict[str, Any]:
    """One ConsumerGroupDescribe entry."""
    return {
        "error_code": 0, "error_message": None, "group_id": group.group_id,
        "group_state": group.state().value, "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch, "assignor_name": group.assignor_name,
        "members": [{
            "member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
            "member_epoch": m.member_epoch, "client_id": m.client_id,
            "client_host": m.client_host,
            "subscribed_topic_names": list(m.subscribed_topic_names),
            "subscribed_topic_regex": m.subscribed_topic_regex,
            "assignment": _described_assignment(m.assigned, image),
            "target_assignment": _described_assignment(group.target.get(m.member_id, {}),
                                                       image),
        } for m in group.members.values()],
        "authorized_operations": -2147483648,
    }


def _described_error(group_id: str, code: int, message: str | None = None) -> dict[str, Any]:
    return {"error_code": int(code), "error_message": message, "group_id": group_id,
            "group_state": "", "group_epoch": -1, "assignment_epoch": -1, "assignor_name": "",
            "members": [], "authorized_operations": -2147483648}


def heartbeat_error(body: Mapping[str, Any], version: int, code: int,
                    message: str | None = None) -> dict:
    return error_body(code, message)


def describe_error(body: Mapping[str, Any], version: int, code: int,
                   message: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "groups": [
        _described_error(g, code, message) for g in body.get("group_ids") or ()]}


CONSUMER_GROUP_ERRORS: dict[int, ErrorBody] = {
    ApiKey.CONSUMER_GROUP_HEARTBEAT: heartbeat_error,
    ApiKey.CONSUMER_GROUP_DESCRIBE: describe_error,
}
