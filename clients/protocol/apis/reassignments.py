"""Partition reassignment APIs (KIP-455): AlterPartitionReassignments and
ListPartitionReassignments."""

from __future__ import annotations

from clients.protocol.api_keys import ApiKey
from clients.protocol.schema import Api, Array, Field, INT16, INT32, STRING, Struct

ALTER_PARTITION_REASSIGNMENTS = Api(
    ApiKey.ALTER_PARTITION_REASSIGNMENTS, "AlterPartitionReassignments", (0, 0), flexible="0+",
    request=(
        Field("timeout_ms", INT32, "0+", default=60000),
        Field("topics", Array(Struct("ReassignableTopic", (
            Field("name", STRING, "0+"),
            Field("partitions", Array(Struct("ReassignablePartition", (
                Field("partition_index", INT32, "0+"),
                # null cancels the partition's pending reassignment
                Field("replicas", Array(INT32), "0+", nullable="0+", default=None),
            ))), "0+"),
        ))), "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("error_code", INT16, "0+"),
        Field("error_message", STRING, "0+", nullable="0+"),
        Field("responses", Array(Struct("ReassignableTopicResponse", (
            Field("name", STRING, "0+"),
            Field("partitions", Array(Struct("ReassignablePartitionResponse", (
                Field("partition_index", INT32, "0+"),
                Field("error_code", INT16, "0+"),
                Field("error_message", STRING, "0+", nullable="0+"),
            ))), "0+"),
        ))), "0+"),
    ),
)

LIST_PARTITION_REASSIGNMENTS = Api(
    ApiKey.LIST_PARTITION_REASSIGNMENTS, "ListPartitionReassignments", (0, 0), flexible="0+",
    request=(
        Field("timeout_ms", INT32, "0+", default=60000),
        Field("topics", Array(Struct("ListPartitionReassignmentsTopics", (
            Field("name", STRING, "0+"),
            Field("partition_indexes", Array(INT32), "0+"),
        ))), "0+", nullable="0+", default=None),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("error_code", INT16, "0+"),
        Field("error_message", STRING, "0+", nullable="0+"),
        Field("topics", Array(Struct("OngoingTopicReassignment", (
            Field("name", STRING, "0+"),
            Field("partitions", Array(Struct("OngoingPartitionReassignment", (
                Field("partition_index", INT32, "0+"),
                Field("replicas", Array(INT32), "0+"),
                Field("adding_replicas", Array(INT32), "0+"),
                Field("removing_replicas", Array(INT32), "0+"),
            ))), "0+"),
        ))), "0+"),
    ),
)

APIS = (ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS)
