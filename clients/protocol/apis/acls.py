"""The ACL administration APIs: DescribeAcls, CreateAcls and DeleteAcls (v0-3)."""

from __future__ import annotations

from clients.protocol.api_keys import ApiKey
from clients.protocol.schema import Api, Array, Field, INT8, INT16, INT32, STRING, Struct

# PatternType.LITERAL: what v0 requests mean, having no pattern type.
_LITERAL = 3

DESCRIBE_ACLS = Api(
    ApiKey.DESCRIBE_ACLS, "DescribeAcls", (0, 3), flexible="2+",
    request=(
        Field("resource_type_filter", INT8, "0+"),
        Field("resource_name_filter", STRING, "0+", nullable="0+"),
        Field("pattern_type_filter", INT8, "1+", default=_LITERAL),
        Field("principal_filter", STRING, "0+", nullable="0+"),
        Field("host_filter", STRING, "0+", nullable="0+"),
        Field("operation", INT8, "0+"),
        Field("permission_type", INT8, "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("error_code", INT16, "0+"),
        Field("error_message", STRING, "0+", nullable="0+"),
        Field("resources", Array(Struct("DescribeAclsResource", (
            Field("resource_type", INT8, "0+"),
            Field("resource_name", STRING, "0+"),
            Field("pattern_type", INT8, "1+", default=_LITERAL),
            Field("acls", Array(Struct("AclDescription", (
                Field("principal", STRING, "0+"),
                Field("host", STRING, "0+"),
                Field("operation", INT8, "0+"),
                Field("permission_type", INT8, "0+"),
            ))), "0+"),
        ))), "0+"),
    ),
)

CREATE_ACLS = Api(
    ApiKey.CREATE_ACLS, "CreateAcls", (0, 3), flexible="2+",
    request=(
        Field("creations", Array(Struct("AclCreation", (
            Field("resource_type", INT8, "0+"),
            Field("resource_name", STRING, "0+"),
            Field("resource_pattern_type", INT8, "1+", default=_LITERAL),
            Field("principal", STRING, "0+"),
            Field("host", STRING, "0+"),
            Field("operation", INT8, "0+"),
            Field("permission_type", INT8, "0+"),
        ))), "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("results", Array(Struct("AclCreationResult", (
            Field("error_code", INT16, "0+"),
            Field("error_message", STRING, "0+", nullable="0+"),
        ))), "0+"),
    ),
)

DELETE_ACLS = Api(
    ApiKey.DELETE_ACLS, "DeleteAcls", (0, 3), flexible="2+",
    request=(
        Field("filters", Array(Struct("DeleteAclsFilter", (
            Field("resource_type_filter", INT8, "0+"),
            Field("resource_name_filter", STRING, "0+", nullable="0+"),
            Field("pattern_type_filter", INT8, "1+", default=_LITERAL),
            Field("principal_filter", STRING, "0+", nullable="0+"),
            Field("host_filter", STRING, "0+", nullable="0+"),
            Field("operation", INT8, "0+"),
            Field("permission_type", INT8, "0+"),
        ))), "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("filter_results", Array(Struct("DeleteAclsFilterResult", (
            Field("error_code", INT16, "0+"),
            Field("error_message", STRING, "0+", nullable="0+"),
            Field("matching_acls", Array(Struct("DeleteAclsMatchingAcl", (
                Field("error_code", INT16, "0+"),
                Field("error_message", STRING, "0+", nullable="0+"),
                Field("resource_type", INT8, "0+"),
                Field("resource_name", STRING, "0+"),
                Field("pattern_type", INT8, "1+", default=_LITERAL),
                Field("principal", STRING, "0+"),
                Field("host", STRING, "0+"),
                Field("operation", INT8, "0+"),
                Field("permission_type", INT8, "0+"),
            ))), "0+"),
        ))), "0+"),
    ),
)

APIS = (DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS)
