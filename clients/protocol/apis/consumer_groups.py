"""The consumer group protocol of KIP-848: ConsumerGroupHeartbeat and ConsumerGroupDescribe."""

from __future__ import annotations

from clients.protocol.api_keys import ApiKey
from clients.protocol.schema import (
    Api,
    Array,
    BOOL,
    Field,
    INT16,
    INT32,
    STRING,
    Struct,
    UUID,
)

CONSUMER_GROUP_HEARTBEAT = Api(
    ApiKey.CONSUMER_GROUP_HEARTBEAT, "ConsumerGroupHeartbeat", (0, 1), flexible="0+",
    request=(
        Field("group_id", STRING, "0+"),
        Field("member_id", STRING, "0+"),
        Field("member_epoch", INT32, "0+"),
        Field("instance_id", STRING, "0+", nullable="0+", default=None),
        Field("rack_id", STRING, "0+", nullable="0+", default=None),
        Field("rebalance_timeout_ms", INT32, "0+", default=-1),
        Field("subscribed_topic_names", Array(STRING), "0+", nullable="0+", default=None),
        Field("subscribed_topic_regex", STRING, "1+", nullable="1+", default=None),
        Field("server_assignor", STRING, "0+", nullable="0+", default=None),
        Field("topic_partitions", Array(Struct("TopicPartitions", (
            Field("topic_id", UUID, "0+"),
            Field("partitions", Array(INT32), "0+"),
        ))), "0+", nullable="0+", default=None),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("error_code", INT16, "0+"),
        Field("error_message", STRING, "0+", nullable="0+", default=None),
        Field("member_id", STRING, "0+", nullable="0+", default=None),
        Field("member_epoch", INT32, "0+"),
        Field("heartbeat_interval_ms", INT32, "0+"),
        Field("assignment", Struct("Assignment", (
            Field("topic_partitions", Array(Struct("TopicPartitions", (
                Field("topic_id", UUID, "0+"),
                Field("partitions", Array(INT32), "0+"),
            ))), "0+"),
        )), "0+", nullable="0+", default=None),
    ),
)

_DESCRIBED_ASSIGNMENT = Struct("Assignment", (
    Field("topic_partitions", Array(Struct("TopicPartitions", (
        Field("topic_id", UUID, "0+"),
        Field("topic_name", STRING, "0+"),
        Field("partitions", Array(INT32), "0+"),
    ))), "0+"),
))

CONSUMER_GROUP_DESCRIBE = Api(
    ApiKey.CONSUMER_GROUP_DESCRIBE, "ConsumerGroupDescribe", (0, 0), flexible="0+",
    request=(
        Field("group_ids", Array(STRING), "0+"),
        Field("include_authorized_operations", BOOL, "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("groups", Array(Struct("DescribedGroup", (
            Field("error_code", INT16, "0+"),
            Field("error_message", STRING, "0+", nullable="0+", default=None),
            Field("group_id", STRING, "0+"),
            Field("group_state", STRING, "0+"),
            Field("group_epoch", INT32, "0+"),
            Field("assignment_epoch", INT32, "0+"),
            Field("assignor_name", STRING, "0+"),
            Field("members", Array(Struct("Member", (
                Field("member_id", STRING, "0+"),
                Field("instance_id", STRING, "0+", nullable="0+", default=None),
                Field("rack_id", STRING, "0+", nullable="0+", default=None),
                Field("member_epoch", INT32, "0+"),
                Field("client_id", STRING, "0+"),
                Field("client_host", STRING, "0+"),
                Field("subscribed_topic_names", Array(STRING), "0+"),
                Field("subscribed_topic_regex", STRING, "0+", nullable="0+", default=None),
                Field("assignment", _DESCRIBED_ASSIGNMENT, "0+"),
                Field("target_assignment", _DESCRIBED_ASSIGNMENT, "0+"),
            ))), "0+"),
            Field("authorized_operations", INT32, "0+", default=-2147483648),
        ))), "0+"),
    ),
)

APIS = (
    CONSUMER_GROUP_HEARTBEAT,
    CONSUMER_GROUP_DESCRIBE,
)
