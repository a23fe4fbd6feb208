"""Cluster operation APIs: leader elections, log directory descriptions, decommissioning."""

from __future__ import annotations

from clients.protocol.api_keys import ApiKey
from clients.protocol.schema import Api, Array, BOOL, Field, INT16, INT32, INT64, INT8, STRING, Struct

ELECT_LEADERS = Api(
    ApiKey.ELECT_LEADERS, "ElectLeaders", (0, 2), flexible="2+",
    request=(
        Field("election_type", INT8, "1+"),
        Field("topic_partitions", Array(Struct("TopicPartitions", (
            Field("topic", STRING, "0+"),
            Field("partitions", Array(INT32), "0+"),
        ))), "0+", nullable="0+"),
        Field("timeout_ms", INT32, "0+", default=60000),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("error_code", INT16, "1+"),
        Field("replica_election_results", Array(Struct("ReplicaElectionResult", (
            Field("topic", STRING, "0+"),
            Field("partition_result", Array(Struct("PartitionResult", (
                Field("partition_id", INT32, "0+"),
                Field("error_code", INT16, "0+"),
                Field("error_message", STRING, "0+", nullable="0+"),
            ))), "0+"),
        ))), "0+"),
    ),
)

DESCRIBE_LOG_DIRS = Api(
    ApiKey.DESCRIBE_LOG_DIRS, "DescribeLogDirs", (1, 4), flexible="2+",
    request=(
        Field("topics", Array(Struct("DescribableLogDirTopic", (
            Field("topic", STRING, "0+"),
            Field("partitions", Array(INT32), "0+"),
        ))), "0+", nullable="0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("error_code", INT16, "3+", ignorable=True),
        Field("results", Array(Struct("DescribeLogDirsResult", (
            Field("error_code", INT16, "0+"),
            Field("log_dir", STRING, "0+"),
            Field("topics", Array(Struct("DescribeLogDirsTopic", (
                Field("name", STRING, "0+"),
                Field("partitions", Array(Struct("DescribeLogDirsPartition", (
                    Field("partition_index", INT32, "0+"),
                    Field("partition_size", INT64, "0+"),
                    Field("offset_lag", INT64, "0+"),
                    Field("is_future_key", BOOL, "0+"),
                ))), "0+"),
            ))), "0+"),
            Field("total_bytes", INT64, "4+", default=-1, ignorable=True),
            Field("usable_bytes", INT64, "4+", default=-1, ignorable=True),
        ))), "0+"),
    ),
)

UNREGISTER_BROKER = Api(
    ApiKey.UNREGISTER_BROKER, "UnregisterBroker", (0, 0), flexible="0+",
    request=(
        Field("broker_id", INT32, "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("error_code", INT16, "0+"),
        Field("error_message", STRING, "0+", nullable="0+"),
    ),
)

APIS = (ELECT_LEADERS, DESCRIBE_LOG_DIRS, UNREGISTER_BROKER)
