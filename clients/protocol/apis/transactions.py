"""Transaction coordinator APIs (KIP-98, KIP-664, KIP-890)."""

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

_ADD_PARTITIONS_TOPIC = Struct("AddPartitionsToTxnTopic", (
    Field("name", STRING, "0+"),
    Field("partitions", Array(INT32), "0+"),
))

_ADD_PARTITIONS_TOPIC_RESULT = Struct("AddPartitionsToTxnTopicResult", (
    Field("name", STRING, "0+"),
    Field("results_by_partition", Array(Struct("AddPartitionsToTxnPartitionResult", (
        Field("partition_index", INT32, "0+"),
        Field("partition_error_code", INT16, "0+"),
    ))), "0+"),
))

ADD_PARTITIONS_TO_TXN = Api(
    ApiKey.ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxn", (0, 5), flexible="3+",
    request=(
        # v4+ is the batched form brokers send (one entry per transaction); v0-3 is the client's.
        Field("transactions", Array(Struct("AddPartitionsToTxnTransaction", (
            Field("transactional_id", STRING, "4+"),
            Field("producer_id", INT64, "4+"),
            Field("producer_epoch", INT16, "4+"),
            Field("verify_only", BOOL, "4+", default=False),
            Field("topics", Array(_ADD_PARTITIONS_TOPIC), "4+"),
        ))), "4+"),
        Field("v3_and_below_transactional_id", STRING, "0-3"),
        Field("v3_and_below_producer_id", INT64, "0-3"),
        Field("v3_and_below_producer_epoch", INT16, "0-3"),
        Field("v3_and_below_topics", Array(_ADD_PARTITIONS_TOPIC), "0-3"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("error_code", INT16, "4+", ignorable=True),
        Field("results_by_transaction", Array(Struct("AddPartitionsToTxnResult", (
            Field("transactional_id", STRING, "4+"),
            Field("topic_results", Array(_ADD_PARTITIONS_TOPIC_RESULT), "4+"),
        ))), "4+"),
        Field("results_by_topic_v3_and_below", Array(_ADD_PARTITIONS_TOPIC_RESULT), "0-3"),
    ),
)

ADD_OFFSETS_TO_TXN = Api(
    ApiKey.ADD_OFFSETS_TO_TXN, "AddOffsetsToTxn", (0, 4), flexible="3+",
    request=(
        Field("transactional_id", STRING, "0+"),
        Field("producer_id", INT64, "0+"),
        Field("producer_epoch", INT16, "0+"),
        Field("group_id", STRING, "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("error_code", INT16, "0+"),
    ),
)

# v5 (the per-transaction epoch bump of KIP-890 part 2) is still unstable in Kafka.
END_TXN = Api(
    ApiKey.END_TXN, "EndTxn", (0, 4), flexible="3+",
    request=(
        Field("transactional_id", STRING, "0+"),
        Field("producer_id", INT64, "0+"),
        Field("producer_epoch", INT16, "0+"),
        Field("committed", BOOL, "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("error_code", INT16, "0+"),
    ),
)

TXN_OFFSET_COMMIT = Api(
    ApiKey.TXN_OFFSET_COMMIT, "TxnOffsetCommit", (0, 4), flexible="3+",
    request=(
        Field("transactional_id", STRING, "0+"),
        Field("group_id", STRING, "0+"),
        Field("producer_id", INT64, "0+"),
        Field("producer_epoch", INT16, "0+"),
        Field("generation_id", INT32, "3+", default=-1),
        Field("member_id", STRING, "3+", default=""),
        Field("group_instance_id", STRING, "3+", nullable="3+", default=None),
        Field("topics", Array(Struct("TxnOffsetCommitRequestTopic", (
            Field("name", STRING, "0+"),
            Field("partitions", Array(Struct("TxnOffsetCommitRequestPartition", (
                Field("partition_index", INT32, "0+"),
                Field("committed_offset", INT64, "0+"),
                Field("committed_leader_epoch", INT32, "2+", default=-1, ignorable=True),
                Field("committed_metadata", STRING, "0+", nullable="0+"),
            ))), "0+"),
        ))), "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("topics", Array(Struct("TxnOffsetCommitResponseTopic", (
            Field("name", STRING, "0+"),
            Field("partitions", Array(Struct("TxnOffsetCommitResponsePartition", (
                Field("partition_index", INT32, "0+"),
                Field("error_code", INT16, "0+"),
            ))), "0+"),
        ))), "0+"),
    ),
)

DESCRIBE_TRANSACTIONS = Api(
    ApiKey.DESCRIBE_TRANSACTIONS, "DescribeTransactions", (0, 0), flexible="0+",
    request=(
        Field("transactional_ids", Array(STRING), "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("transaction_states", Array(Struct("TransactionState", (
            Field("error_code", INT16, "0+"),
            Field("transactional_id", STRING, "0+"),
            Field("transaction_state", STRING, "0+"),
            Field("transaction_timeout_ms", INT32, "0+"),
            Field("transaction_start_time_ms", INT64, "0+"),
            Field("producer_id", INT64, "0+"),
            Field("producer_epoch", INT16, "0+"),
            Field("topics", Array(Struct("TopicData", (
                Field("topic", STRING, "0+"),
                Field("partitions", Array(INT32), "0+"),
            ))), "0+"),
        ))), "0+"),
    ),
)

LIST_TRANSACTIONS = Api(
    ApiKey.LIST_TRANSACTIONS, "ListTransactions", (0, 1), flexible="0+",
    request=(
        Field("state_filters", Array(STRING), "0+"),
        Field("producer_id_filters", Array(INT64), "0+"),
        Field("duration_filter", INT64, "1+", default=-1),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("error_code", INT16, "0+"),
        Field("unknown_state_filters", Array(STRING), "0+"),
        Field("transaction_states", Array(Struct("TransactionState", (
            Field("transactional_id", STRING, "0+"),
            Field("producer_id", INT64, "0+"),
            Field("transaction_state", STRING, "0+"),
        ))), "0+"),
    ),
)

APIS = (
    ADD_PARTITIONS_TO_TXN,
    ADD_OFFSETS_TO_TXN,
    END_TXN,
    TXN_OFFSET_COMMIT,
    DESCRIBE_TRANSACTIONS,
    LIST_TRANSACTIONS,
)
