"""SCRAM credential administration APIs (KIP-554)."""

from __future__ import annotations

from clients.protocol.api_keys import ApiKey
from clients.protocol.schema import Api, Array, BYTES, Field, INT16, INT32, INT8, STRING, Struct

DESCRIBE_USER_SCRAM_CREDENTIALS = Api(
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, "DescribeUserScramCredentials", (0, 0),
    flexible="0+",
    request=(
        Field("users", Array(Struct("UserName", (
            Field("name", STRING, "0+"),
        ))), "0+", nullable="0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("error_code", INT16, "0+"),
        Field("error_message", STRING, "0+", nullable="0+"),
        Field("results", Array(Struct("DescribeUserScramCredentialsResult", (
            Field("user", STRING, "0+"),
            Field("error_code", INT16, "0+"),
            Field("error_message", STRING, "0+", nullable="0+"),
            Field("credential_infos", Array(Struct("CredentialInfo", (
                Field("mechanism", INT8, "0+"),
                Field("iterations", INT32, "0+"),
            ))), "0+"),
        ))), "0+"),
    ),
)

ALTER_USER_SCRAM_CREDENTIALS = Api(
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS, "AlterUserScramCredentials", (0, 0), flexible="0+",
    request=(
        Field("deletions", Array(Struct("ScramCredentialDeletion", (
            Field("name", STRING, "0+"),
            Field("mechanism", INT8, "0+"),
        ))), "0+"),
        Field("upsertions", Array(Struct("ScramCredentialUpsertion", (
            Field("name", STRING, "0+"),
            Field("mechanism", INT8, "0+"),
            Field("iterations", INT32, "0+"),
            Field("salt", BYTES, "0+"),
            Field("salted_password", BYTES, "0+"),
        ))), "0+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "0+"),
        Field("results", Array(Struct("AlterUserScramCredentialsResult", (
            Field("user", STRING, "0+"),
            Field("error_code", INT16, "0+"),
            Field("error_message", STRING, "0+", nullable="0+"),
        ))), "0+"),
    ),
)

APIS = (DESCRIBE_USER_SCRAM_CREDENTIALS, ALTER_USER_SCRAM_CREDENTIALS)
