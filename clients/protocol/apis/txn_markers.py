"""Partition-leader transaction APIs: writing transaction markers, describing producers."""

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

WRITE_TXN_MARKERS = Api(
    ApiKey.WRITE_TXN_MARKERS, "WriteTxnMarkers", (0, 1), flexible="1+",
    request=(
        Field("markers", Array(Struct("WritableTxnMarker", (
            Field("producer_id", INT64, "0+"),
            Field("producer_epoch", INT16, "0+"),
            Field("transaction_result", BOOL, "0+"),
            Field("topics", Array(Struct("WritableTxnMarkerTopic", (
                Field("name", STRING, "0+"),
                Field("partition_indexes", Array(INT32), "0+"),
            ))), "0+"),
            Field("coordinator_epoch", INT32, "0+"),
        ))), "0+"),
    ),
    response=(
        Field("markers", Array(Struct("WritableTxnMarkerResult", (
            Field("producer_id", INT64, "0+"),
            Field("topics", Array(Struct("WritableTxnMarkerTopicResult", (
                Field("name", STRING, "0+"),
                Field("partitions", Array(Struct("WritableTxnMarkerPartitionResult", (
                    Field("partition_index", INT32, "0+"),
                    Field("error_code", INT16, "0+"),
                ))), "0+"),
            ))), "0+"),
        ))), "0+"),
    ),
)

DESCRIBE_PRODUCERS = Api(
    ApiKey.DESCRIBE_PRODUCERS, "DescribeProducers", (0, 0), flexible="0+",
    request=(
        Field("topics", Array(Struct("TopicRequest", (
            Field("name", STRING, "0+"),
            Field("partition_indexes", Array(INT32), "0+"),
        ))), "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("topics", Array(Struct("TopicResponse", (
            Field("name", STRING, "0+"),
            Field("partitions", Array(Struct("PartitionResponse", (
                Field("partition_index", INT32, "0+"),
                Field("error_code", INT16, "0+"),
                Field("error_message", STRING, "0+", nullable="0+", default=None),
                Field("active_producers", Array(Struct("ProducerState", (
                    Field("producer_id", INT64, "0+"),
                    Field("producer_epoch", INT32, "0+"),
                    Field("last_sequence", INT32, "0+", default=-1),
                    Field("last_timestamp", INT64, "0+", default=-1),
                    Field("coordinator_epoch", INT32, "0+"),
                    Field("current_txn_start_offset", INT64, "0+", default=-1),
                ))), "0+"),
            ))), "0+"),
        ))), "0+"),
    ),
)

APIS = (
    WRITE_TXN_MARKERS,
    DESCRIBE_PRODUCERS,
)
