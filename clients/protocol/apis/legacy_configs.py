"""AlterConfigs (key 33), the non-incremental form older clients use: each named resource's
dynamic configs are replaced by the given set."""

from __future__ import annotations

from clients.protocol.api_keys import ApiKey
from clients.protocol.schema import Api, Array, BOOL, Field, INT16, INT32, INT8, STRING, Struct

ALTER_CONFIGS = Api(
    ApiKey.ALTER_CONFIGS, "AlterConfigs", (0, 2), flexible="2+",
    request=(
        Field("resources", Array(Struct("AlterConfigsResource", (
            Field("resource_type", INT8, "0+"),
            Field("resource_name", STRING, "0+"),
            Field("configs", Array(Struct("AlterableConfig", (
                Field("name", STRING, "0+"),
                Field("value", STRING, "0+", nullable="0+"),
            ))), "0+"),
        ))), "0+"),
        Field("validate_only", BOOL, "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("responses", Array(Struct("AlterConfigsResourceResponse", (
            Field("error_code", INT16, "0+"),
            Field("error_message", STRING, "0+", nullable="0+"),
            Field("resource_type", INT8, "0+"),
            Field("resource_name", STRING, "0+"),
        ))), "0+"),
    ),
)

APIS = (ALTER_CONFIGS,)
