"""AlterConfigs (key 33), the non-incremental form older clients use: each named resource's
dynamic configs are replaced by the given set."""

from __future__ import annotations

from clients.protocol.api_keys import ApiKey
from clients.protocol.apis.admin import ALTER_CONFIGS_RESPONSE
from clients.protocol.schema import Api, Array, BOOL, Field, INT8, STRING, Struct

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
    response=ALTER_CONFIGS_RESPONSE,
)

APIS = (ALTER_CONFIGS,)
