"""DescribeClientQuotas, answered from the broker's metadata image (as Kafka's brokers do),
and the error answers of both quota APIs; AlterClientQuotas is forwarded to the active
controller (broker.apis.admin)."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from broker.apis.request import DecodedRequest, RequestContext, RequestRouter
from clients.protocol import ApiKey, ErrorCode
from metadata.controller.client_quotas import describe_client_quotas
from metadata.image import MetadataImage


def _message(code: int, message: str | None) -> str:
    return message if message is not None else ErrorCode.from_code(code).message


def alter_client_quotas_error(body: Mapping[str, Any], version: int, code: int,
                              message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "entries": [
        {"error_code": code, "error_message": _message(code, message),
         "entity": [{"entity_type": e.get("entity_type"), "entity_name": e.get("entity_name")}
                    for e in entry.get("entity") or ()]}
        for entry in body.get("entries") or ()]}


def describe_client_quotas_error(body: Mapping[str, Any], version: int, code: int,
                                 message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code,
            "error_message": _message(code, message), "entries": None}


class DescribeClientQuotasHandler:
    """DescribeClientQuotas from the current image."""

    def __init__(self, image: Callable[[], MetadataImage]) -> None:
        self._image = image

    def register(self, router: RequestRouter) -> None:
        router.register(ApiKey.DESCRIBE_CLIENT_QUOTAS, self.handle, describe_client_quotas_error)

    async def handle(self, request: DecodedRequest, ctx: RequestContext) -> dict:
        return describe_client_quotas(self._image(), request.body)
