"""Connection set-up APIs: version discovery and SASL."""

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
    INT64,
    STRING,
    Struct,
)

API_VERSIONS = Api(
    ApiKey.API_VERSIONS, "ApiVersions", (0, 3), flexible="3+",
    request=(
        Field("client_software_name", STRING, "3+", ignorable=True),
        Field("client_software_version", STRING, "3+", ignorable=True),
    ),
    response=(
        Field("error_code", INT16, "0+"),
        Field("api_keys", Array(Struct("ApiVersion", (
            Field("api_key", INT16, "0+"),
            Field("min_version", INT16, "0+"),
            Field("max_version", INT16, "0+"),
        ))), "0+"),
        Field("throttle_time_ms", INT32, "1+", ignorable=True),
        Field("supported_features", Array(Struct("SupportedFeatureKey", (
            Field("name", STRING, "3+"),
            Field("min_version", INT16, "3+"),
            Field("max_version", INT16, "3+"),
        ))), "3+", tag=0, tagged="3+", ignorable=True),
        Field("finalized_features_epoch", INT64, "3+", tag=1, tagged="3+", default=-1,
            ignorable=True),
        Field("finalized_features", Array(Struct("FinalizedFeatureKey", (
            Field("name", STRING, "3+"),
            Field("max_version_level", INT16, "3+"),
            Field("min_version_level", INT16, "3+"),
        ))), "3+", tag=2, tagged="3+", ignorable=True),
        Field("zk_migration_ready", BOOL, "3+", tag=3, tagged="3+", default=False, ignorable=True),
    ),
)

SASL_HANDSHAKE = Api(
    ApiKey.SASL_HANDSHAKE, "SaslHandshake", (0, 1), flexible="none",
    request=(
        Field("mechanism", STRING, "0+"),
    ),
    response=(
        Field("error_code", INT16, "0+"),
        Field("mechanisms", Array(STRING), "0+"),
    ),
)

SASL_AUTHENTICATE = Api(
    ApiKey.SASL_AUTHENTICATE, "SaslAuthenticate", (0, 2), flexible="2+",
    request=(
        Field("auth_bytes", BYTES, "0+"),
    ),
    response=(
        Field("error_code", INT16, "0+"),
        Field("error_message", STRING, "0+", nullable="0+"),
        Field("auth_bytes", BYTES, "0+"),
        Field("session_lifetime_ms", INT64, "1+", ignorable=True),
    ),
)

APIS = (
    API_VERSIONS,
    SASL_HANDSHAKE,
    SASL_AUTHENTICATE,
)
