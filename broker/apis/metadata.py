"""Metadata (v0-12) and DescribeCluster (v0-1) on the broker listeners, from the image.

Brokers listed are the live (registered, unfenced) ones, each with its endpoint on the
listener the request arrived on, as Kafka answers. In KRaft clients cannot reach the
controllers, so `controller_id` is a random live broker (Kafka's KRaft behaviour); -1 only
while no broker is live.

A broker whose session with the controller has lapsed has been fenced by now, its leaderships
moved, though it has not heard so: it answers its own partitions as leaderless
(LEADER_NOT_AVAILABLE), so a client that asks it goes on asking until it finds the new
leader elsewhere, instead of coming back to a leader that refuses it.
"""

from __future__ import annotations

import random
import uuid
from typing import Awaitable, Callable, Mapping, Sequence

from broker.apis.authorization import ALLOW_ALL, AclOperation, Authorization, ResourceType
from broker.apis.common import Slicer
from broker.apis.request import DecodedRequest, RequestContext, RequestRouter
from clients.protocol import ZERO_UUID, ApiKey, ErrorCode
from clients.protocol.messages.describe_cluster import (
    DescribeClusterRequestData,
    DescribeClusterResponseData,
)
from clients.protocol.messages.metadata import MetadataRequestData, MetadataResponseData
from metadata.describe import describe_topic_by_id, describe_topics, metadata_brokers
from metadata.image import MetadataImage
from metadata.records import NO_LEADER
from metadata.topic_names import topic_name_error

# Kafka's "authorized operations not requested" sentinel (Integer.MIN_VALUE).
OPERATIONS_NOT_REQUESTED = -2147483648
BROKER_ENDPOINT_TYPE = 1

Topic = MetadataResponseData.MetadataResponseTopic

# Creates missing topics for Metadata requests that allow it; returns an error code per
# topic name for the response (Kafka answers LEADER_NOT_AVAILABLE while a topic is new).
AutoCreateTopics = Callable[[Sequence[str]], Awaitable[Mapping[str, int]]]


class MetadataHandlers:
    """Answers Metadata and DescribeCluster from `image()`, the broker's current image."""

    def __init__(self, image: Callable[[], MetadataImage], cluster_id: str, *,
                 auto_create: AutoCreateTopics | None = None,
                 rng: random.Random | None = None,
                 authz: Authorization = ALLOW_ALL,
                 broker_id: int | None = None,
                 session_lapsed: Callable[[], bool] | None = None) -> None:
        self._image = image
        self._broker_id = broker_id
        self._session_lapsed = session_lapsed
        self._authz = authz
        self._cluster_id = cluster_id
        self._auto_create = auto_create
        self._rng = rng or random.Random()

    def register(self, router: RequestRouter) -> None:
        router.register(ApiKey.METADATA, self.handle_metadata, metadata_error)
        router.register(ApiKey.DESCRIBE_CLUSTER, self.handle_describe_cluster,
                        describe_cluster_error)

    async def handle_metadata(self, request: DecodedRequest,
                              ctx: RequestContext) -> MetadataResponseData:
        body: MetadataRequestData = request.body
        version = request.api_version
        image = self._image()
        listener = ctx.listener_name
        requested = body.topics
        authz = self._authz
        if requested is None or (version == 0 and not requested):
            # v0: an empty list means all. Topics the principal may not describe are left
            # out, their existence undisclosed.
            topics = describe_topics(image, None, listener)
            if authz.enabled:
                visible = authz.allowed_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                              (t.name for t in topics))
                topics = [t for t in topics if t.name in visible]
        else:
            topics = await self._requested_topics(image, requested, version, listener,
                                                  body.allow_auto_topic_creation, ctx)
        if body.include_topic_authorized_operations:
            for topic in topics:
                if topic.error_code == ErrorCode.NONE:
                    topic.topic_authorized_operations = authz.operations(
                        ctx, ResourceType.TOPIC, topic.name)
        if self._session_lapsed is not None and self._session_lapsed():
            _disclaim_leadership(topics, self._broker_id)
        brokers = metadata_brokers(image, listener)
        response = MetadataResponseData(
            brokers=brokers,
            cluster_id=self._cluster_id,
            controller_id=self._controller_id([b.node_id for b in brokers]),
            topics=topics,
        )
        if body.include_cluster_authorized_operations:
            response.cluster_authorized_operations = self._cluster_operations(ctx)
        return response

    def _cluster_operations(self, ctx: RequestContext) -> int:
        """Kafka answers 0 to a principal that may not describe the cluster."""
        if not self._authz.cluster(ctx, AclOperation.DESCRIBE):
            return 0
        return self._authz.operations(ctx, ResourceType.CLUSTER)

    async def handle_describe_cluster(self, request: DecodedRequest,
                                      ctx: RequestContext) -> DescribeClusterResponseData:
        body: DescribeClusterRequestData = request.body
        if body.endpoint_type != BROKER_ENDPOINT_TYPE:
            return describe_cluster_error(body, request.api_version,
                                          ErrorCode.MISMATCHED_ENDPOINT_TYPE,
                                          "The request was sent to a broker endpoint; "
                                          "controllers answer for controller endpoints.")
        image = self._image()
        Broker = DescribeClusterResponseData.DescribeClusterBroker
        brokers = [Broker(broker_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
                   for b in metadata_brokers(image, ctx.listener_name)]
        return DescribeClusterResponseData(
            error_code=ErrorCode.NONE,
            endpoint_type=BROKER_ENDPOINT_TYPE,
            cluster_id=self._cluster_id,
            controller_id=self._controller_id([b.broker_id for b in brokers]),
            brokers=brokers,
            cluster_authorized_operations=(
                self._cluster_operations(ctx) if body.include_cluster_authorized_operations
                else OPERATIONS_NOT_REQUESTED),
        )

    async def _requested_topics(self, image: MetadataImage,
                                requested: list[MetadataRequestData.MetadataRequestTopic],
                                version: int, listener: str, allow_auto_create: bool,
                                ctx: RequestContext) -> list[Topic]:
        authz = self._authz
        names = {entry.name for entry in requested if entry.name is not None}
        for entry in requested:
            topic = image.topic_by_id(entry.topic_id)
            if entry.name is None and topic is not None:
                names.add(topic.name)
        describable = authz.allowed_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
        topics: list[Topic] = []
        missing: list[int] = []
        # Each topic is answered once, however often it is named (Kafka takes the request's
        # topics as a set): a name repeated 100,000 times costs one description.
        seen: set[str | uuid.UUID] = set()
        slicer = Slicer()
        for entry in requested:
            name, topic_id = entry.name, entry.topic_id
            key = name if name is not None else topic_id
            if key in seen:
                continue
            seen.add(key)
            await slicer.tick()
            if version < 12 and (name is None or topic_id != ZERO_UUID):
                # Before v12 Kafka rejects null names and topic ids in the request.
                topics.append(_topic_error(name, topic_id, ErrorCode.INVALID_REQUEST))
            elif name is None:
                described = describe_topic_by_id(image, topic_id, listener)
                if described.error_code == ErrorCode.NONE and \
                        described.name not in describable:
                    # Topic ids are not secret: Kafka names the id in the refusal.
                    described = _topic_error(None, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                topics.append(described)
            elif name not in describable:
                topics.append(_topic_error(name, ZERO_UUID, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            elif topic_name_error(name) is not None:
                topics.append(_topic_error(name, ZERO_UUID, ErrorCode.INVALID_TOPIC_EXCEPTION))
            else:
                topics.extend(describe_topics(image, [name], listener))
                if topics[-1].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    missing.append(len(topics) - 1)
                else:
                    await slicer.tick(len(topics[-1].partitions))
        if missing and allow_auto_create and self._auto_create is not None:
            if not authz.cluster(ctx, AclOperation.CREATE):
                creatable = authz.allowed_names(ctx, AclOperation.CREATE, ResourceType.TOPIC,
                                                (topics[i].name for i in missing))
                for i in missing:
                    if topics[i].name not in creatable:
                        topics[i].error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                missing = [i for i in missing if topics[i].name in creatable]
        if missing and allow_auto_create and self._auto_create is not None:
            codes = await self._auto_create([topics[i].name for i in missing])
            for i in missing:
                topics[i].error_code = codes.get(topics[i].name, topics[i].error_code)
        return topics

    def _controller_id(self, broker_ids: list[int]) -> int:
        if not broker_ids:
            return -1
        return self._rng.choice(broker_ids)


def _disclaim_leadership(topics: list[Topic], broker_id: int | None) -> None:
    """Answer the partitions `broker_id` leads as leaderless."""
    for topic in topics:
        for partition in topic.partitions:
            if partition.leader_id == broker_id:
                partition.leader_id = NO_LEADER
                partition.error_code = ErrorCode.LEADER_NOT_AVAILABLE


def _topic_error(name: str | None, topic_id: uuid.UUID, code: int) -> Topic:
    return Topic(error_code=code, name=name, topic_id=topic_id)


def metadata_error(body: MetadataRequestData, version: int, error_code: int,
                   message: str | None = None) -> MetadataResponseData:
    """Metadata has no top-level error: every requested topic carries it (Kafka's
    MetadataRequest.getErrorResponse)."""
    return MetadataResponseData(
        topics=[_topic_error(t.name, t.topic_id, error_code) for t in body.topics or ()])


def describe_cluster_error(body: DescribeClusterRequestData, version: int, error_code: int,
                           message: str | None = None) -> DescribeClusterResponseData:
    return DescribeClusterResponseData(error_code=error_code, error_message=message,
                                       endpoint_type=BROKER_ENDPOINT_TYPE)
