"""Client quota administration APIs (KIP-546): DescribeClientQuotas and AlterClientQuotas."""

from __future__ import annotations

from clients.protocol.api_keys import ApiKey
from clients.protocol.schema import Api, Array, BOOL, FLOAT64, Field, INT16, INT32, INT8, STRING, Struct


def _entity(name: str) -> Field:
    return Field("entity", Array(Struct(name, (
        Field("entity_type", STRING, "0+"),
        Field("entity_name", STRING, "0+", nullable="0+"),
    ))), "0+")


DESCRIBE_CLIENT_QUOTAS = Api(
    ApiKey.DESCRIBE_CLIENT_QUOTAS, "DescribeClientQuotas", (0, 1), flexible="1+",
    request=(
        Field("components", Array(Struct("ComponentData", (
            Field("entity_type", STRING, "0+"),
            Field("match_type", INT8, "0+"),
            Field("match", STRING, "0+", nullable="0+"),
        ))), "0+"),
        Field("strict", BOOL, "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("error_code", INT16, "0+"),
        Field("error_message", STRING, "0+", nullable="0+"),
        Field("entries", Array(Struct("EntryData", (
            _entity("EntityData"),
            Field("values", Array(Struct("ValueData", (
                Field("key", STRING, "0+"),
                Field("value", FLOAT64, "0+"),
            ))), "0+"),
        ))), "0+", nullable="0+"),
    ),
)

ALTER_CLIENT_QUOTAS = Api(
    ApiKey.ALTER_CLIENT_QUOTAS, "AlterClientQuotas", (0, 1), flexible="1+",
    request=(
        Field("entries", Array(Struct("EntryData", (
            _entity("EntityData"),
            Field("ops", Array(Struct("OpData", (
                Field("key", STRING, "0+"),
                Field("value", FLOAT64, "0+"),
                Field("remove", BOOL, "0+"),
            ))), "0+"),
        ))), "0+"),
        Field("validate_only", BOOL, "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("entries", Array(Struct("EntryData", (
            Field("error_code", INT16, "0+"),
            Field("error_message", STRING, "0+", nullable="0+"),
            _entity("EntityData"),
        ))), "0+"),
    ),
)

APIS = (DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS)
