"""Consumer group offset APIs."""

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
    STRING,
    Struct,
)

OFFSET_COMMIT = Api(
    ApiKey.OFFSET_COMMIT, "OffsetCommit", (2, 9), flexible="8+",
    request=(
        Field("group_id", STRING, "0+"),
        Field("generation_id_or_member_epoch", INT32, "1+", default=-1, ignorable=True),
        Field("member_id", STRING, "1+", ignorable=True),
        Field("group_instance_id", STRING, "7+", nullable="7+", default=None),
        Field("retention_time_ms", INT64, "2-4", default=-1, ignorable=True),
        Field("topics", Array(Struct("OffsetCommitRequestTopic", (
            Field("name", STRING, "0+"),
            Field("partitions", Array(Struct("OffsetCommitRequestPartition", (
                Field("partition_index", INT32, "0+"),
                Field("committed_offset", INT64, "0+"),
                Field("committed_leader_epoch", INT32, "6+", default=-1, ignorable=True),
                Field("committed_metadata", STRING, "0+", nullable="0+"),
            ))), "0+"),
        ))), "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "3+", ignorable=True),
        Field("topics", Array(Struct("OffsetCommitResponseTopic", (
            Field("name", STRING, "0+"),
            Field("partitions", Array(Struct("OffsetCommitResponsePartition", (
                Field("partition_index", INT32, "0+"),
                Field("error_code", INT16, "0+"),
            ))), "0+"),
        ))), "0+"),
    ),
)

OFFSET_FETCH = Api(
    ApiKey.OFFSET_FETCH, "OffsetFetch", (1, 9), flexible="6+",
    request=(
        Field("group_id", STRING, "0-7"),
        Field("topics", Array(Struct("OffsetFetchRequestTopic", (
            Field("name", STRING, "0-7"),
            Field("partition_indexes", Array(INT32), "0-7"),
        ))), "0-7", nullable="2-7"),
        Field("groups", Array(Struct("OffsetFetchRequestGroup", (
            Field("group_id", STRING, "8+"),
            Field("member_id", STRING, "9+", nullable="9+", default=None, ignorable=True),
            Field("member_epoch", INT32, "9+", default=-1, ignorable=True),
            Field("topics", Array(Struct("OffsetFetchRequestTopics", (
                Field("name", STRING, "8+"),
                Field("partition_indexes", Array(INT32), "8+"),
            ))), "8+", nullable="8+"),
        ))), "8+"),
        Field("require_stable", BOOL, "7+", default=False),
    ),
    response=(
        Field("throttle_time_ms", INT32, "3+", ignorable=True),
        Field("topics", Array(Struct("OffsetFetchResponseTopic", (
            Field("name", STRING, "0-7"),
            Field("partitions", Array(Struct("OffsetFetchResponsePartition", (
                Field("partition_index", INT32, "0-7"),
                Field("committed_offset", INT64, "0-7"),
                Field("committed_leader_epoch", INT32, "5-7", default=-1, ignorable=True),
                Field("metadata", STRING, "0-7", nullable="0-7"),
                Field("error_code", INT16, "0-7"),
            ))), "0-7"),
        ))), "0-7"),
        Field("error_code", INT16, "2-7", ignorable=True),
        Field("groups", Array(Struct("OffsetFetchResponseGroup", (
            Field("group_id", STRING, "8+"),
            Field("topics", Array(Struct("OffsetFetchResponseTopics", (
                Field("name", STRING, "8+"),
                Field("partitions", Array(Struct("OffsetFetchResponsePartitions", (
                    Field("partition_index", INT32, "8+"),
                    Field("committed_offset", INT64, "8+"),
                    Field("committed_leader_epoch", INT32, "8+", default=-1, ignorable=True),
                    Field("metadata", STRING, "8+", nullable="8+"),
                    Field("error_code", INT16, "8+"),
                ))), "8+"),
            ))), "8+"),
            Field("error_code", INT16, "8+"),
        ))), "8+"),
    ),
)

APIS = (
    OFFSET_COMMIT,
    OFFSET_FETCH,
)
