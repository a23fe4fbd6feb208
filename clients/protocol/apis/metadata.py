"""Cluster and topic discovery APIs."""

from __future__ import annotations

from clients.protocol.api_keys import ApiKey
from clients.protocol.schema import (
    Api,
    Array,
    BOOL,
    Field,
    INT16,
    INT32,
    INT8,
    STRING,
    Struct,
    UUID,
)

METADATA = Api(
    ApiKey.METADATA, "Metadata", (0, 12), flexible="9+",
    request=(
        Field("topics", Array(Struct("MetadataRequestTopic", (
            Field("topic_id", UUID, "10+", ignorable=True),
            Field("name", STRING, "0+", nullable="10+"),
        ))), "0+", nullable="1+"),
        Field("allow_auto_topic_creation", BOOL, "4+", default=True),
        Field("include_cluster_authorized_operations", BOOL, "8-10"),
        Field("include_topic_authorized_operations", BOOL, "8+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "3+", ignorable=True),
        Field("brokers", Array(Struct("MetadataResponseBroker", (
            Field("node_id", INT32, "0+"),
            Field("host", STRING, "0+"),
            Field("port", INT32, "0+"),
            Field("rack", STRING, "1+", nullable="1+", default=None, ignorable=True),
        ))), "0+"),
        Field("cluster_id", STRING, "2+", nullable="2+", default=None, ignorable=True),
        Field("controller_id", INT32, "1+", default=-1, ignorable=True),
        Field("topics", Array(Struct("MetadataResponseTopic", (
            Field("error_code", INT16, "0+"),
            Field("name", STRING, "0+", nullable="12+"),
            Field("topic_id", UUID, "10+", ignorable=True),
            Field("is_internal", BOOL, "1+", default=False, ignorable=True),
            Field("partitions", Array(Struct("MetadataResponsePartition", (
                Field("error_code", INT16, "0+"),
                Field("partition_index", INT32, "0+"),
                Field("leader_id", INT32, "0+"),
                Field("leader_epoch", INT32, "7+", default=-1, ignorable=True),
                Field("replica_nodes", Array(INT32), "0+"),
                Field("isr_nodes", Array(INT32), "0+"),
                Field("offline_replicas", Array(INT32), "5+", ignorable=True),
            ))), "0+"),
            Field("topic_authorized_operations", INT32, "8+", default=-2147483648),
        ))), "0+"),
        Field("cluster_authorized_operations", INT32, "8-10", default=-2147483648),
    ),
)

DESCRIBE_CLUSTER = Api(
    ApiKey.DESCRIBE_CLUSTER, "DescribeCluster", (0, 1), flexible="0+",
    request=(
        Field("include_cluster_authorized_operations", BOOL, "0+"),
        Field("endpoint_type", INT8, "1+", default=1),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("error_code", INT16, "0+"),
        Field("error_message", STRING, "0+", nullable="0+", default=None),
        Field("endpoint_type", INT8, "1+", default=1),
        Field("cluster_id", STRING, "0+"),
        Field("controller_id", INT32, "0+", default=-1),
        Field("brokers", Array(Struct("DescribeClusterBroker", (
            Field("broker_id", INT32, "0+"),
            Field("host", STRING, "0+"),
            Field("port", INT32, "0+"),
            Field("rack", STRING, "0+", nullable="0+", default=None),
        ))), "0+"),
        Field("cluster_authorized_operations", INT32, "0+", default=-2147483648),
    ),
)

APIS = (
    METADATA,
    DESCRIBE_CLUSTER,
)
