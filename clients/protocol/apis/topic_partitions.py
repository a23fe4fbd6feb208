"""DescribeTopicPartitions (KIP-966): topic metadata with a paging cursor."""

from __future__ import annotations

from clients.protocol.api_keys import ApiKey
from clients.protocol.schema import Api, Array, BOOL, Field, INT16, INT32, STRING, UUID, Struct


def _cursor(name: str) -> Field:
    return Field(name, Struct("Cursor", (
        Field("topic_name", STRING, "0+"),
        Field("partition_index", INT32, "0+"),
    )), "0+", nullable="0+", default=None)


DESCRIBE_TOPIC_PARTITIONS = Api(
    ApiKey.DESCRIBE_TOPIC_PARTITIONS, "DescribeTopicPartitions", (0, 0), flexible="0+",
    request=(
        Field("topics", Array(Struct("TopicRequest", (
            Field("name", STRING, "0+"),
        ))), "0+"),
        Field("response_partition_limit", INT32, "0+", default=2000),
        _cursor("cursor"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+", ignorable=True),
        Field("topics", Array(Struct("DescribeTopicPartitionsResponseTopic", (
            Field("error_code", INT16, "0+"),
            Field("name", STRING, "0+", nullable="0+"),
            Field("topic_id", UUID, "0+", ignorable=True),
            Field("is_internal", BOOL, "0+", default=False, ignorable=True),
            Field("partitions", Array(Struct("DescribeTopicPartitionsResponsePartition", (
                Field("error_code", INT16, "0+"),
                Field("partition_index", INT32, "0+"),
                Field("leader_id", INT32, "0+"),
                Field("leader_epoch", INT32, "0+", default=-1, ignorable=True),
                Field("replica_nodes", Array(INT32), "0+"),
                Field("isr_nodes", Array(INT32), "0+"),
                Field("eligible_leader_replicas", Array(INT32), "0+", nullable="0+",
                      default=None),
                Field("last_known_elr", Array(INT32), "0+", nullable="0+", default=None),
                Field("offline_replicas", Array(INT32), "0+", ignorable=True),
            ))), "0+"),
            Field("topic_authorized_operations", INT32, "0+", default=-2147483648),
        ))), "0+"),
        _cursor("next_cursor"),
    ),
)

APIS = (DESCRIBE_TOPIC_PARTITIONS,)
