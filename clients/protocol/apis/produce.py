"""Producer APIs."""

from __future__ import annotations

from clients.protocol.api_keys import ApiKey
from clients.protocol.schema import (
    Api,
    Array,
    Field,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    Struct,
)

PRODUCE = Api(
    ApiKey.PRODUCE, "Produce", (3, 9), flexible="9+",
    request=(
        Field("transactional_id", STRING, "3+", nullable="3+", default=None),
        Field("acks", INT16, "0+"),
        Field("timeout_ms", INT32, "0+"),
        Field("topic_data", Array(Struct("TopicProduceData", (
            Field("name", STRING, "0+"),
            Field("partition_data", Array(Struct("PartitionProduceData", (
                Field("index", INT32, "0+"),
                Field("records", RECORDS, "0+", nullable="0+"),
            ))), "0+"),
        ))), "0+"),
    ),
    response=(
        Field("responses", Array(Struct("TopicProduceResponse", (
            Field("name", STRING, "0+"),
            Field("partition_responses", Array(Struct("PartitionProduceResponse", (
                Field("index", INT32, "0+"),
                Field("error_code", INT16, "0+"),
                Field("base_offset", INT64, "0+"),
                Field("log_append_time_ms", INT64, "2+", default=-1, ignorable=True),
                Field("log_start_offset", INT64, "5+", default=-1, ignorable=True),
                Field("record_errors", Array(Struct("BatchIndexAndErrorMessage", (
                    Field("batch_index", INT32, "8+"),
                    Field("batch_index_error_message", STRING, "8+", nullable="8+", default=None),
                ))), "8+", ignorable=True),
                Field("error_message", STRING, "8+", nullable="8+", default=None, ignorable=True),
            ))), "0+"),
        ))), "0+"),
        Field("throttle_time_ms", INT32, "1+", ignorable=True),
    ),
)

INIT_PRODUCER_ID = Api(
    ApiKey.INIT_PRODUCER_ID, "InitProducerId", (0, 4), flexible="2+",
    request=(
        Field("transactional_id", STRING, "0+", nullable="0+"),
        Field("transaction_timeout_ms", INT32, "0+"),
        Field("producer_id", INT64, "3+", default=-1),
        Field("producer_epoch", INT16, "3+", default=-1),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+", ignorable=True),
        Field("error_code", INT16, "0+"),
        Field("producer_id", INT64, "0+", default=-1),
        Field("producer_epoch", INT16, "0+"),
    ),
)

APIS = (
    PRODUCE,
    INIT_PRODUCER_ID,
)
