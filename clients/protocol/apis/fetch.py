"""Consumer and replica read-side APIs: fetching and offset lookup."""

from __future__ import annotations

from clients.protocol.api_keys import ApiKey
from clients.protocol.schema import (
    Api,
    Array,
    Field,
    INT16,
    INT32,
    INT64,
    INT8,
    RECORDS,
    STRING,
    Struct,
)

FETCH = Api(
    ApiKey.FETCH, "Fetch", (4, 12), flexible="12+",
    request=(
        Field("cluster_id", STRING, "12+", nullable="12+", tag=0, tagged="12+", default=None,
            ignorable=True),
        Field("replica_id", INT32, "0-14", default=-1),
        Field("max_wait_ms", INT32, "0+"),
        Field("min_bytes", INT32, "0+"),
        Field("max_bytes", INT32, "3+", default=0x7FFFFFFF, ignorable=True),
        Field("isolation_level", INT8, "4+", ignorable=True),
        Field("session_id", INT32, "7+", ignorable=True),
        Field("session_epoch", INT32, "7+", default=-1, ignorable=True),
        Field("topics", Array(Struct("FetchTopic", (
            Field("topic", STRING, "0-12", ignorable=True),
            Field("partitions", Array(Struct("FetchPartition", (
                Field("partition", INT32, "0+"),
                Field("current_leader_epoch", INT32, "9+", default=-1, ignorable=True),
                Field("fetch_offset", INT64, "0+"),
                Field("last_fetched_epoch", INT32, "12+", default=-1),
                Field("log_start_offset", INT64, "5+", default=-1, ignorable=True),
                Field("partition_max_bytes", INT32, "0+"),
            ))), "0+"),
        ))), "0+"),
        Field("forgotten_topics_data", Array(Struct("ForgottenTopic", (
            Field("topic", STRING, "7-12", ignorable=True),
            Field("partitions", Array(INT32), "7+"),
        ))), "7+"),
        Field("rack_id", STRING, "11+", ignorable=True),
    ),
    response=(
        Field("throttle_time_ms", INT32, "1+", ignorable=True),
        Field("error_code", INT16, "7+", ignorable=True),
        Field("session_id", INT32, "7+"),
        Field("responses", Array(Struct("FetchableTopicResponse", (
            Field("topic", STRING, "0-12", ignorable=True),
            Field("partitions", Array(Struct("PartitionData", (
                Field("partition_index", INT32, "0+"),
                Field("error_code", INT16, "0+"),
                Field("high_watermark", INT64, "0+"),
                Field("last_stable_offset", INT64, "4+", default=-1, ignorable=True),
                Field("log_start_offset", INT64, "5+", default=-1, ignorable=True),
                Field("diverging_epoch", Struct("EpochEndOffset", (
                    Field("epoch", INT32, "12+", default=-1),
                    Field("end_offset", INT64, "12+", default=-1),
                )), "12+", tag=0, tagged="12+"),
                Field("current_leader", Struct("LeaderIdAndEpoch", (
                    Field("leader_id", INT32, "12+", default=-1),
                    Field("leader_epoch", INT32, "12+", default=-1),
                )), "12+", tag=1, tagged="12+"),
                Field("snapshot_id", Struct("SnapshotId", (
                    Field("end_offset", INT64, "0+", default=-1),
                    Field("epoch", INT32, "0+", default=-1),
                )), "12+", tag=2, tagged="12+"),
                Field("aborted_transactions", Array(Struct("AbortedTransaction", (
                    Field("producer_id", INT64, "4+"),
                    Field("first_offset", INT64, "4+"),
                ))), "4+", nullable="4+", ignorable=True),
                Field("preferred_read_replica", INT32, "11+", default=-1),
                Field("records", RECORDS, "0+", nullable="0+"),
            ))), "0+"),
        ))), "0+"),
    ),
)

LIST_OFFSETS = Api(
    ApiKey.LIST_OFFSETS, "ListOffsets", (1, 7), flexible="6+",
    request=(
        Field("replica_id", INT32, "0+"),
        Field("isolation_level", INT8, "2+"),
        Field("topics", Array(Struct("ListOffsetsTopic", (
            Field("name", STRING, "0+"),
            Field("partitions", Array(Struct("ListOffsetsPartition", (
                Field("partition_index", INT32, "0+"),
                Field("current_leader_epoch", INT32, "4+", default=-1, ignorable=True),
                Field("timestamp", INT64, "0+"),
            ))), "0+"),
        ))), "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "2+", ignorable=True),
        Field("topics", Array(Struct("ListOffsetsTopicResponse", (
            Field("name", STRING, "0+"),
            Field("partitions", Array(Struct("ListOffsetsPartitionResponse", (
                Field("partition_index", INT32, "0+"),
                Field("error_code", INT16, "0+"),
                Field("timestamp", INT64, "1+", default=-1),
                Field("offset", INT64, "1+", default=-1),
                Field("leader_epoch", INT32, "4+", default=-1),
            ))), "0+"),
        ))), "0+"),
    ),
)

OFFSET_FOR_LEADER_EPOCH = Api(
    ApiKey.OFFSET_FOR_LEADER_EPOCH, "OffsetForLeaderEpoch", (2, 4), flexible="4+",
    request=(
        Field("replica_id", INT32, "3+", default=-2, ignorable=True),
        Field("topics", Array(Struct("OffsetForLeaderTopic", (
            Field("topic", STRING, "0+"),
            Field("partitions", Array(Struct("OffsetForLeaderPartition", (
                Field("partition", INT32, "0+"),
                Field("current_leader_epoch", INT32, "2+", default=-1, ignorable=True),
                Field("leader_epoch", INT32, "0+"),
            ))), "0+"),
        ))), "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "2+", ignorable=True),
        Field("topics", Array(Struct("OffsetForLeaderTopicResult", (
            Field("topic", STRING, "0+"),
            Field("partitions", Array(Struct("EpochEndOffset", (
                Field("error_code", INT16, "0+"),
                Field("partition", INT32, "0+"),
                Field("leader_epoch", INT32, "1+", default=-1, ignorable=True),
                Field("end_offset", INT64, "0+", default=-1),
            ))), "0+"),
        ))), "0+"),
    ),
)

DELETE_RECORDS = Api(
    ApiKey.DELETE_RECORDS, "DeleteRecords", (0, 2), flexible="2+",
    request=(
        Field("topics", Array(Struct("DeleteRecordsTopic", (
            Field("name", STRING, "0+"),
            Field("partitions", Array(Struct("DeleteRecordsPartition", (
                Field("partition_index", INT32, "0+"),
                Field("offset", INT64, "0+"),
            ))), "0+"),
        ))), "0+"),
        Field("timeout_ms", INT32, "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("topics", Array(Struct("DeleteRecordsTopicResult", (
            Field("name", STRING, "0+"),
            Field("partitions", Array(Struct("DeleteRecordsPartitionResult", (
                Field("partition_index", INT32, "0+"),
                Field("low_watermark", INT64, "0+"),
                Field("error_code", INT16, "0+"),
            ))), "0+"),
        ))), "0+"),
    ),
)

APIS = (
    FETCH,
    LIST_OFFSETS,
    OFFSET_FOR_LEADER_EPOCH,
    DELETE_RECORDS,
)
