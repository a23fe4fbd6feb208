"""Topic and configuration administration APIs."""

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

CREATE_TOPICS = Api(
    ApiKey.CREATE_TOPICS, "CreateTopics", (2, 7), flexible="5+",
    request=(
        Field("topics", Array(Struct("CreatableTopic", (
            Field("name", STRING, "0+"),
            Field("num_partitions", INT32, "0+"),
            Field("replication_factor", INT16, "0+"),
            Field("assignments", Array(Struct("CreatableReplicaAssignment", (
                Field("partition_index", INT32, "0+"),
                Field("broker_ids", Array(INT32), "0+"),
            ))), "0+"),
            Field("configs", Array(Struct("CreatableTopicConfig", (
                Field("name", STRING, "0+"),
                Field("value", STRING, "0+", nullable="0+"),
            ))), "0+"),
        ))), "0+"),
        Field("timeout_ms", INT32, "0+", default=60000),
        Field("validate_only", BOOL, "1+", default=False),
    ),
    response=(
        Field("throttle_time_ms", INT32, "2+", ignorable=True),
        Field("topics", Array(Struct("CreatableTopicResult", (
            Field("name", STRING, "0+"),
            Field("topic_id", UUID, "7+", ignorable=True),
            Field("error_code", INT16, "0+"),
            Field("error_message", STRING, "1+", nullable="0+", ignorable=True),
            Field("topic_config_error_code", INT16, "5+", tag=0, tagged="5+", ignorable=True),
            Field("num_partitions", INT32, "5+", default=-1, ignorable=True),
            Field("replication_factor", INT16, "5+", default=-1, ignorable=True),
            Field("configs", Array(Struct("CreatableTopicConfigs", (
                Field("name", STRING, "5+"),
                Field("value", STRING, "5+", nullable="5+"),
                Field("read_only", BOOL, "5+"),
                Field("config_source", INT8, "5+", default=-1, ignorable=True),
                Field("is_sensitive", BOOL, "5+"),
            ))), "5+", nullable="5+", ignorable=True),
        ))), "0+"),
    ),
)

DELETE_TOPICS = Api(
    ApiKey.DELETE_TOPICS, "DeleteTopics", (1, 6), flexible="4+",
    request=(
        Field("topics", Array(Struct("DeleteTopicState", (
            Field("name", STRING, "6+", nullable="6+", default=None),
            Field("topic_id", UUID, "6+"),
        ))), "6+"),
        Field("topic_names", Array(STRING), "0-5", ignorable=True),
        Field("timeout_ms", INT32, "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "1+", ignorable=True),
        Field("responses", Array(Struct("DeletableTopicResult", (
            Field("name", STRING, "0+", nullable="6+"),
            Field("topic_id", UUID, "6+", ignorable=True),
            Field("error_code", INT16, "0+"),
            Field("error_message", STRING, "5+", nullable="5+", default=None, ignorable=True),
        ))), "0+"),
    ),
)

CREATE_PARTITIONS = Api(
    ApiKey.CREATE_PARTITIONS, "CreatePartitions", (0, 3), flexible="2+",
    request=(
        Field("topics", Array(Struct("CreatePartitionsTopic", (
            Field("name", STRING, "0+"),
            Field("count", INT32, "0+"),
            Field("assignments", Array(Struct("CreatePartitionsAssignment", (
                Field("broker_ids", Array(INT32), "0+"),
            ))), "0+", nullable="0+"),
        ))), "0+"),
        Field("timeout_ms", INT32, "0+"),
        Field("validate_only", BOOL, "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("results", Array(Struct("CreatePartitionsTopicResult", (
            Field("name", STRING, "0+"),
            Field("error_code", INT16, "0+"),
            Field("error_message", STRING, "0+", nullable="0+", default=None),
        ))), "0+"),
    ),
)

DESCRIBE_CONFIGS = Api(
    ApiKey.DESCRIBE_CONFIGS, "DescribeConfigs", (1, 4), flexible="4+",
    request=(
        Field("resources", Array(Struct("DescribeConfigsResource", (
            Field("resource_type", INT8, "0+"),
            Field("resource_name", STRING, "0+"),
            Field("configuration_keys", Array(STRING), "0+", nullable="0+"),
        ))), "0+"),
        Field("include_synonyms", BOOL, "1+", default=False),
        Field("include_documentation", BOOL, "3+", default=False),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("results", Array(Struct("DescribeConfigsResult", (
            Field("error_code", INT16, "0+"),
            Field("error_message", STRING, "0+", nullable="0+"),
            Field("resource_type", INT8, "0+"),
            Field("resource_name", STRING, "0+"),
            Field("configs", Array(Struct("DescribeConfigsResourceResult", (
                Field("name", STRING, "0+"),
                Field("value", STRING, "0+", nullable="0+"),
                Field("read_only", BOOL, "0+"),
                Field("config_source", INT8, "1+", default=-1, ignorable=True),
                Field("is_sensitive", BOOL, "0+"),
                Field("synonyms", Array(Struct("DescribeConfigsSynonym", (
                    Field("name", STRING, "1+"),
                    Field("value", STRING, "1+", nullable="0+"),
                    Field("source", INT8, "1+"),
                ))), "1+", ignorable=True),
                Field("config_type", INT8, "3+", ignorable=True),
                Field("documentation", STRING, "3+", nullable="0+", ignorable=True),
            ))), "0+"),
        ))), "0+"),
    ),
)

# The response of IncrementalAlterConfigs and of the legacy AlterConfigs.
ALTER_CONFIGS_RESPONSE = (
    Field("throttle_time_ms", INT32, "0+"),
    Field("responses", Array(Struct("AlterConfigsResourceResponse", (
        Field("error_code", INT16, "0+"),
        Field("error_message", STRING, "0+", nullable="0+"),
        Field("resource_type", INT8, "0+"),
        Field("resource_name", STRING, "0+"),
    ))), "0+"),
)

INCREMENTAL_ALTER_CONFIGS = Api(
    ApiKey.INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigs", (0, 1), flexible="1+",
    request=(
        Field("resources", Array(Struct("AlterConfigsResource", (
            Field("resource_type", INT8, "0+"),
            Field("resource_name", STRING, "0+"),
            Field("configs", Array(Struct("AlterableConfig", (
                Field("name", STRING, "0+"),
                Field("config_operation", INT8, "0+"),
                Field("value", STRING, "0+", nullable="0+"),
            ))), "0+"),
        ))), "0+"),
        Field("validate_only", BOOL, "0+"),
    ),
    response=ALTER_CONFIGS_RESPONSE,
)

APIS = (
    CREATE_TOPICS,
    DELETE_TOPICS,
    CREATE_PARTITIONS,
    DESCRIBE_CONFIGS,
    INCREMENTAL_ALTER_CONFIGS,
)
