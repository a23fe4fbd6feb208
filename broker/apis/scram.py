"""DescribeUserScramCredentials, answered from the broker's metadata image (as Kafka's
brokers do), and the error answer of AlterUserScramCredentials, which the broker forwards to
the active controller (broker.apis.admin)."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from broker.apis.request import DecodedRequest, RequestContext, RequestRouter
from clients.protocol import ApiKey, ErrorCode
from metadata.controller.scram import describe_user_scram_credentials
from metadata.image import MetadataImage


def _message(code: int, message: str | None) -> str:
    return message if message is not None else ErrorCode.from_code(code).message


def alter_user_scram_credentials_error(body: Mapping[str, Any], version: int, code: int,
                                       message: str | None = None) -> dict[str, Any]:
    users = dict.fromkeys(str(e.get("name") or "") for key in ("deletions", "upsertions")
                          for e in body.get(key) or ())
    return {"throttle_time_ms": 0, "results": [
        {"user": user, "error_code": code, "error_message": _message(code, message)}
        for user in users]}


def describe_user_scram_credentials_error(body: Mapping[str, Any], version: int, code: int,
                                          message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code,
            "error_message": _message(code, message), "results": []}


class DescribeScramHandler:
    """DescribeUserScramCredentials from the current image: mechanisms and iterations."""

    def __init__(self, image: Callable[[], MetadataImage]) -> None:
        self._image = image

    def register(self, router: RequestRouter) -> None:
        router.register(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, self.handle,
                        describe_user_scram_credentials_error)

    async def handle(self, request: DecodedRequest, ctx: RequestContext) -> dict:
        return describe_user_scram_credentials(self._image(), request.body)
