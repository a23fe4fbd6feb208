"""DescribeTopicPartitions (KIP-966) from the broker's image, with its paging cursor.

An empty topic list means every topic the principal may describe (others are left out
undisclosed); named topics it may not describe get TOPIC_AUTHORIZATION_FAILED, unknown ones
UNKNOWN_TOPIC_OR_PARTITION. The page size is the request's `response_partition_limit`,
at most `max.request.partition.size.limit` (2000, Kafka's default).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from broker.apis.authorization import ALLOW_ALL, AclOperation, Authorization, ResourceType
from broker.apis.request import DecodedRequest, RequestContext, RequestRouter
from clients.protocol import ZERO_UUID, ApiKey, ErrorCode
from metadata.image import MetadataImage
from metadata.topic_partition_pages import topic_partition_page

MAX_REQUEST_PARTITION_SIZE_LIMIT = 2000


def describe_topic_partitions_error(body: Mapping[str, Any], version: int, code: int,
                                    message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "next_cursor": None, "topics": [
        {"error_code": code, "name": t.get("name"), "topic_id": ZERO_UUID, "is_internal": False,
         "partitions": [], "topic_authorized_operations": -2147483648}
        for t in body.get("topics") or ()]}


class DescribeTopicPartitionsHandler:
    """Answers DescribeTopicPartitions from `image()`."""

    def __init__(self, image: Callable[[], MetadataImage],
                 authz: Authorization = ALLOW_ALL) -> None:
        self._image = image
        self._authz = authz

    def register(self, router: RequestRouter) -> None:
        router.register(ApiKey.DESCRIBE_TOPIC_PARTITIONS, self.handle,
                        describe_topic_partitions_error)

    async def handle(self, request: DecodedRequest, ctx: RequestContext) -> dict:
        body = request.body
        image = self._image()
        requested = [str(t["name"]) for t in body.get("topics") or ()]
        raw_cursor = body.get("cursor")
        cursor = None if raw_cursor is None else (str(raw_cursor["topic_name"]),
                                                  int(raw_cursor["partition_index"]))
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
        limit = min(int(body.get("response_partition_limit", 2000)),
                    MAX_REQUEST_PARTITION_SIZE_LIMIT)
        response = topic_partition_page(image, topics, max(limit, 1), cursor, ctx.listener_name)
        for topic in response["topics"]:
            if topic["error_code"] == ErrorCode.NONE:
                topic["topic_authorized_operations"] = self._authz.operations(
                    ctx, ResourceType.TOPIC, topic["name"])
        return response
