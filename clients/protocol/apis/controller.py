"""Controller RPCs sent by brokers (and DescribeQuorum, answered by the quorum)."""

from __future__ import annotations

from clients.protocol.api_keys import ApiKey
from clients.protocol.schema import (
    Api,
    Array,
    BOOL,
    Field,
    INT16,
    INT32,
    INT64,
    INT8,
    STRING,
    Struct,
    UINT16,
    UUID,
)

BROKER_REGISTRATION = Api(
    ApiKey.BROKER_REGISTRATION, "BrokerRegistration", (0, 4), flexible="0+",
    request=(
        Field("broker_id", INT32, "0+"),
        Field("cluster_id", STRING, "0+"),
        Field("incarnation_id", UUID, "0+"),
        Field("listeners", Array(Struct("Listener", (
            Field("name", STRING, "0+"),
            Field("host", STRING, "0+"),
            Field("port", UINT16, "0+"),
            Field("security_protocol", INT16, "0+"),
        ))), "0+"),
        Field("features", Array(Struct("Feature", (
            Field("name", STRING, "0+"),
            Field("min_supported_version", INT16, "0+"),
            Field("max_supported_version", INT16, "0+"),
        ))), "0+"),
        Field("rack", STRING, "0+", nullable="0+"),
        Field("is_migrating_zk_broker", BOOL, "1+", default=False),
        Field("log_dirs", Array(UUID), "2+", ignorable=True),
        Field("previous_broker_epoch", INT64, "3+", default=-1, ignorable=True),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("error_code", INT16, "0+"),
        Field("broker_epoch", INT64, "0+", default=-1),
    ),
)

BROKER_HEARTBEAT = Api(
    ApiKey.BROKER_HEARTBEAT, "BrokerHeartbeat", (0, 1), flexible="0+",
    request=(
        Field("broker_id", INT32, "0+"),
        Field("broker_epoch", INT64, "0+", default=-1),
        Field("current_metadata_offset", INT64, "0+"),
        Field("want_fence", BOOL, "0+"),
        Field("want_shut_down", BOOL, "0+"),
        Field("offline_log_dirs", Array(UUID), "1+", tag=0, tagged="1+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("error_code", INT16, "0+"),
        Field("is_caught_up", BOOL, "0+", default=False),
        Field("is_fenced", BOOL, "0+", default=True),
        Field("should_shut_down", BOOL, "0+"),
    ),
)

ALTER_PARTITION = Api(
    ApiKey.ALTER_PARTITION, "AlterPartition", (0, 3), flexible="0+",
    request=(
        Field("broker_id", INT32, "0+"),
        Field("broker_epoch", INT64, "0+", default=-1),
        Field("topics", Array(Struct("TopicData", (
            Field("topic_name", STRING, "0-1", ignorable=True),
            Field("topic_id", UUID, "2+", ignorable=True),
            Field("partitions", Array(Struct("PartitionData", (
                Field("partition_index", INT32, "0+"),
                Field("leader_epoch", INT32, "0+"),
                Field("new_isr", Array(INT32), "0-2"),
                Field("new_isr_with_epochs", Array(Struct("BrokerState", (
                    Field("broker_id", INT32, "3+"),
                    Field("broker_epoch", INT64, "3+", default=-1),
                ))), "3+"),
                Field("leader_recovery_state", INT8, "1+"),
                Field("partition_epoch", INT32, "0+"),
            ))), "0+"),
        ))), "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("error_code", INT16, "0+"),
        Field("topics", Array(Struct("TopicData", (
            Field("topic_name", STRING, "0-1", ignorable=True),
            Field("topic_id", UUID, "2+", ignorable=True),
            Field("partitions", Array(Struct("PartitionData", (
                Field("partition_index", INT32, "0+"),
                Field("error_code", INT16, "0+"),
                Field("leader_id", INT32, "0+"),
                Field("leader_epoch", INT32, "0+"),
                Field("isr", Array(INT32), "0+"),
                Field("leader_recovery_state", INT8, "1+", ignorable=True),
                Field("partition_epoch", INT32, "0+"),
            ))), "0+"),
        ))), "0+"),
    ),
)

REPLICA_STATE = Struct("ReplicaState", (
    Field("replica_id", INT32, "0+"),
    Field("replica_directory_id", UUID, "2+"),
    Field("log_end_offset", INT64, "0+"),
    Field("last_fetch_timestamp", INT64, "1+", default=-1, ignorable=True),
    Field("last_caught_up_timestamp", INT64, "1+", default=-1, ignorable=True),
))

DESCRIBE_QUORUM = Api(
    ApiKey.DESCRIBE_QUORUM, "DescribeQuorum", (0, 2), flexible="0+",
    request=(
        Field("topics", Array(Struct("TopicData", (
            Field("topic_name", STRING, "0+"),
            Field("partitions", Array(Struct("PartitionData", (
                Field("partition_index", INT32, "0+"),
            ))), "0+"),
        ))), "0+"),
    ),
    response=(
        Field("error_code", INT16, "0+"),
        Field("error_message", STRING, "2+", nullable="2+", ignorable=True),
        Field("topics", Array(Struct("TopicData", (
            Field("topic_name", STRING, "0+"),
            Field("partitions", Array(Struct("PartitionData", (
                Field("partition_index", INT32, "0+"),
                Field("error_code", INT16, "0+"),
                Field("error_message", STRING, "2+", nullable="2+", ignorable=True),
                Field("leader_id", INT32, "0+"),
                Field("leader_epoch", INT32, "0+"),
                Field("high_watermark", INT64, "0+"),
                Field("current_voters", Array(REPLICA_STATE), "0+"),
                Field("observers", Array(REPLICA_STATE), "0+"),
            ))), "0+"),
        ))), "0+"),
        Field("nodes", Array(Struct("Node", (
            Field("node_id", INT32, "2+"),
            Field("listeners", Array(Struct("Listener", (
                Field("name", STRING, "2+"),
                Field("host", STRING, "2+"),
                Field("port", UINT16, "2+"),
            ))), "2+"),
        ))), "2+"),
    ),
)

ALLOCATE_PRODUCER_IDS = Api(
    ApiKey.ALLOCATE_PRODUCER_IDS, "AllocateProducerIds", (0, 0), flexible="0+",
    request=(
        Field("broker_id", INT32, "0+"),
        Field("broker_epoch", INT64, "0+", default=-1),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("error_code", INT16, "0+"),
        Field("producer_id_start", INT64, "0+"),
        Field("producer_id_len", INT32, "0+"),
    ),
)

APIS = (
    BROKER_REGISTRATION,
    BROKER_HEARTBEAT,
    ALTER_PARTITION,
    DESCRIBE_QUORUM,
    ALLOCATE_PRODUCER_IDS,
)
