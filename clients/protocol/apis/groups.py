"""Consumer group membership APIs."""

from __future__ import annotations

from clients.protocol.api_keys import ApiKey
from clients.protocol.schema import (
    Api,
    Array,
    BOOL,
    BYTES,
    Field,
    INT16,
    INT32,
    INT8,
    STRING,
    Struct,
)

FIND_COORDINATOR = Api(
    ApiKey.FIND_COORDINATOR, "FindCoordinator", (0, 4), flexible="3+",
    request=(
        Field("key", STRING, "0-3"),
        Field("key_type", INT8, "1+"),
        Field("coordinator_keys", Array(STRING), "4+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "1+", ignorable=True),
        Field("error_code", INT16, "0-3"),
        Field("error_message", STRING, "1-3", nullable="1-3", ignorable=True),
        Field("node_id", INT32, "0-3"),
        Field("host", STRING, "0-3"),
        Field("port", INT32, "0-3"),
        Field("coordinators", Array(Struct("Coordinator", (
            Field("key", STRING, "4+"),
            Field("node_id", INT32, "4+"),
            Field("host", STRING, "4+"),
            Field("port", INT32, "4+"),
            Field("error_code", INT16, "4+"),
            Field("error_message", STRING, "4+", nullable="4+", ignorable=True),
        ))), "4+"),
    ),
)

JOIN_GROUP = Api(
    ApiKey.JOIN_GROUP, "JoinGroup", (0, 9), flexible="6+",
    request=(
        Field("group_id", STRING, "0+"),
        Field("session_timeout_ms", INT32, "0+"),
        Field("rebalance_timeout_ms", INT32, "1+", default=-1, ignorable=True),
        Field("member_id", STRING, "0+"),
        Field("group_instance_id", STRING, "5+", nullable="5+", default=None),
        Field("protocol_type", STRING, "0+"),
        Field("protocols", Array(Struct("JoinGroupRequestProtocol", (
            Field("name", STRING, "0+"),
            Field("metadata", BYTES, "0+"),
        ))), "0+"),
        Field("reason", STRING, "8+", nullable="8+", default=None, ignorable=True),
    ),
    response=(
        Field("throttle_time_ms", INT32, "2+", ignorable=True),
        Field("error_code", INT16, "0+"),
        Field("generation_id", INT32, "0+", default=-1),
        Field("protocol_type", STRING, "7+", nullable="7+", default=None, ignorable=True),
        Field("protocol_name", STRING, "0+", nullable="7+"),
        Field("leader", STRING, "0+"),
        Field("skip_assignment", BOOL, "9+", default=False),
        Field("member_id", STRING, "0+"),
        Field("members", Array(Struct("JoinGroupResponseMember", (
            Field("member_id", STRING, "0+"),
            Field("group_instance_id", STRING, "5+", nullable="5+", default=None, ignorable=True),
            Field("metadata", BYTES, "0+"),
        ))), "0+"),
    ),
)

SYNC_GROUP = Api(
    ApiKey.SYNC_GROUP, "SyncGroup", (0, 5), flexible="4+",
    request=(
        Field("group_id", STRING, "0+"),
        Field("generation_id", INT32, "0+"),
        Field("member_id", STRING, "0+"),
        Field("group_instance_id", STRING, "3+", nullable="3+", default=None),
        Field("protocol_type", STRING, "5+", nullable="5+", default=None, ignorable=True),
        Field("protocol_name", STRING, "5+", nullable="5+", default=None, ignorable=True),
        Field("assignments", Array(Struct("SyncGroupRequestAssignment", (
            Field("member_id", STRING, "0+"),
            Field("assignment", BYTES, "0+"),
        ))), "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "1+", ignorable=True),
        Field("error_code", INT16, "0+"),
        Field("protocol_type", STRING, "5+", nullable="5+", default=None, ignorable=True),
        Field("protocol_name", STRING, "5+", nullable="5+", default=None, ignorable=True),
        Field("assignment", BYTES, "0+"),
    ),
)

HEARTBEAT = Api(
    ApiKey.HEARTBEAT, "Heartbeat", (0, 4), flexible="4+",
    request=(
        Field("group_id", STRING, "0+"),
        Field("generation_id", INT32, "0+"),
        Field("member_id", STRING, "0+"),
        Field("group_instance_id", STRING, "3+", nullable="3+", default=None),
    ),
    response=(
        Field("throttle_time_ms", INT32, "1+", ignorable=True),
        Field("error_code", INT16, "0+"),
    ),
)

LEAVE_GROUP = Api(
    ApiKey.LEAVE_GROUP, "LeaveGroup", (0, 5), flexible="4+",
    request=(
        Field("group_id", STRING, "0+"),
        Field("member_id", STRING, "0-2"),
        Field("members", Array(Struct("MemberIdentity", (
            Field("member_id", STRING, "3+"),
            Field("group_instance_id", STRING, "3+", nullable="3+", default=None),
            Field("reason", STRING, "5+", nullable="5+", default=None, ignorable=True),
        ))), "3+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "1+", ignorable=True),
        Field("error_code", INT16, "0+"),
        Field("members", Array(Struct("MemberResponse", (
            Field("member_id", STRING, "3+"),
            Field("group_instance_id", STRING, "3+", nullable="3+"),
            Field("error_code", INT16, "3+"),
        ))), "3+"),
    ),
)

LIST_GROUPS = Api(
    ApiKey.LIST_GROUPS, "ListGroups", (0, 4), flexible="3+",
    request=(
        Field("states_filter", Array(STRING), "4+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "1+", ignorable=True),
        Field("error_code", INT16, "0+"),
        Field("groups", Array(Struct("ListedGroup", (
            Field("group_id", STRING, "0+"),
            Field("protocol_type", STRING, "0+"),
            Field("group_state", STRING, "4+", ignorable=True),
        ))), "0+"),
    ),
)

DESCRIBE_GROUPS = Api(
    ApiKey.DESCRIBE_GROUPS, "DescribeGroups", (0, 5), flexible="5+",
    request=(
        Field("groups", Array(STRING), "0+"),
        Field("include_authorized_operations", BOOL, "3+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "1+", ignorable=True),
        Field("groups", Array(Struct("DescribedGroup", (
            Field("error_code", INT16, "0+"),
            Field("group_id", STRING, "0+"),
            Field("group_state", STRING, "0+"),
            Field("protocol_type", STRING, "0+"),
            Field("protocol_data", STRING, "0+"),
            Field("members", Array(Struct("DescribedGroupMember", (
                Field("member_id", STRING, "0+"),
                Field("group_instance_id", STRING, "4+", nullable="4+", default=None,
                    ignorable=True),
                Field("client_id", STRING, "0+"),
                Field("client_host", STRING, "0+"),
                Field("member_metadata", BYTES, "0+"),
                Field("member_assignment", BYTES, "0+"),
            ))), "0+"),
            Field("authorized_operations", INT32, "3+", default=-2147483648),
        ))), "0+"),
    ),
)

DELETE_GROUPS = Api(
    ApiKey.DELETE_GROUPS, "DeleteGroups", (0, 2), flexible="2+",
    request=(
        Field("groups_names", Array(STRING), "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("results", Array(Struct("DeletableGroupResult", (
            Field("group_id", STRING, "0+"),
            Field("error_code", INT16, "0+"),
        ))), "0+"),
    ),
)

OFFSET_DELETE = Api(
    ApiKey.OFFSET_DELETE, "OffsetDelete", (0, 0), flexible="none",
    request=(
        Field("group_id", STRING, "0+"),
        Field("topics", Array(Struct("OffsetDeleteRequestTopic", (
            Field("name", STRING, "0+"),
            Field("partitions", Array(Struct("OffsetDeleteRequestPartition", (
                Field("partition_index", INT32, "0+"),
            ))), "0+"),
        ))), "0+"),
    ),
    response=(
        Field("error_code", INT16, "0+"),
        Field("throttle_time_ms", INT32, "0+", ignorable=True),
        Field("topics", Array(Struct("OffsetDeleteResponseTopic", (
            Field("name", STRING, "0+"),
            Field("partitions", Array(Struct("OffsetDeleteResponsePartition", (
                Field("partition_index", INT32, "0+"),
                Field("error_code", INT16, "0+"),
            ))), "0+"),
        ))), "0+"),
    ),
)

APIS = (
    FIND_COORDINATOR,
    JOIN_GROUP,
    SYNC_GROUP,
    HEARTBEAT,
    LEAVE_GROUP,
    LIST_GROUPS,
    DESCRIBE_GROUPS,
    DELETE_GROUPS,
    OFFSET_DELETE,
)
