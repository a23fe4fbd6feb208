"""DescribeClientQuotas, answered from the broker's metadata image (as Kafka's brokers do);
AlterClientQuotas is forwarded to the active controller (broker.apis.admin). Both responses
are defined in metadata.controller.client_quotas."""

from __future__ import annotations

from typing import Callable

from broker.apis.request import DecodedRequest, RequestContext, RequestRouter
from clients.protocol import ApiKey
from clients.protocol.messages.describe_client_quotas import DescribeClientQuotasResponseData
from metadata.controller.client_quotas import (
    describe_client_quotas,
    describe_client_quotas_error,
)
from metadata.image import MetadataImage


class DescribeClientQuotasHandler:
    """DescribeClientQuotas from the current image."""

    def __init__(self, image: Callable[[], MetadataImage]) -> None:
        self._image = image

    def register(self, router: RequestRouter) -> None:
        router.register(ApiKey.DESCRIBE_CLIENT_QUOTAS, self.handle, describe_client_quotas_error)

    async def handle(self, request: DecodedRequest,
                     ctx: RequestContext) -> DescribeClientQuotasResponseData:
        return describe_client_quotas(self._image(), request.body)
