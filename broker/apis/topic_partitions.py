"""DescribeTopicPartitions (KIP-966) from the broker's image, with its paging cursor.

An empty topic list means every topic the principal may describe (others are left out
undisclosed); named topics it may not describe get TOPIC_AUTHORIZATION_FAILED, unknown ones
UNKNOWN_TOPIC_OR_PARTITION. The page size is the request's `response_partition_limit`,
at most `max.request.partition.size.limit` (2000, Kafka's default).
"""

from __future__ import annotations

from typing import Callable

from broker.apis.authorization import ALLOW_ALL, AclOperation, Authorization, ResourceType
from broker.apis.request import DecodedRequest, RequestContext, RequestRouter
from clients.protocol import ApiKey, ErrorCode
from clients.protocol.messages.describe_topic_partitions import (
    DescribeTopicPartitionsRequestData,
    DescribeTopicPartitionsResponseData,
)
from metadata.image import MetadataImage
from metadata.topic_partition_pages import topic_partition_page

MAX_REQUEST_PARTITION_SIZE_LIMIT = 2000


def describe_topic_partitions_error(body: DescribeTopicPartitionsRequestData, version: int,
                                    code: int, message: str | None = None
                                    ) -> DescribeTopicPartitionsResponseData:
    Topic = DescribeTopicPartitionsResponseData.DescribeTopicPartitionsResponseTopic
    return DescribeTopicPartitionsResponseData(
        topics=[Topic(error_code=code, name=t.name) for t in body.topics])


class DescribeTopicPartitionsHandler:
    """Answers DescribeTopicPartitions from `image()`."""

    def __init__(self, image: Callable[[], MetadataImage],
                 authz: Authorization = ALLOW_ALL) -> None:
        self._image = image
        self._authz = authz

    def register(self, router: RequestRouter) -> None:
        router.register(ApiKey.DESCRIBE_TOPIC_PARTITIONS, self.handle,
                        describe_topic_partitions_error)

    async def handle(self, request: DecodedRequest,
                     ctx: RequestContext) -> DescribeTopicPartitionsResponseData:
        body: DescribeTopicPartitionsRequestData = request.body
        image = self._image()
        requested = [t.name for t in body.topics]
        cursor = None if body.cursor is None else (body.cursor.topic_name,
                                                   body.cursor.partition_index)
        if cursor is not None and (cursor[1] < 0 or (requested and cursor[0] not in requested)):
            return describe_topic_partitions_error(
                body, request.api_version, ErrorCode.INVALID_REQUEST)
        if requested:
            allowed = self._authz.allowed_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                                requested)
            topics = [(n, ErrorCode.NONE if n in allowed
                       else ErrorCode.TOPIC_AUTHORIZATION_FAILED) for n in set(requested)]
        else:
            names = sorted(image.topics_by_name)
            allowed = self._authz.allowed_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                                names)
            topics = [(n, ErrorCode.NONE) for n in names if n in allowed]
        limit = min(body.response_partition_limit, MAX_REQUEST_PARTITION_SIZE_LIMIT)
        response = topic_partition_page(image, topics, max(limit, 1), cursor, ctx.listener_name)
        for topic in response.topics:
            if topic.error_code == ErrorCode.NONE:
                topic.topic_authorized_operations = self._authz.operations(
                    ctx, ResourceType.TOPIC, topic.name)
        return response
