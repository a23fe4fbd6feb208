"""DescribeUserScramCredentials, answered from the broker's metadata image (as Kafka's
brokers do); AlterUserScramCredentials is forwarded to the active controller
(broker.apis.admin). Both responses are defined in metadata.controller.scram."""

from __future__ import annotations

from typing import Callable

from broker.apis.request import DecodedRequest, RequestContext, RequestRouter
from clients.protocol import ApiKey
from clients.protocol.messages.describe_user_scram_credentials import (
    DescribeUserScramCredentialsResponseData,
)
from metadata.controller.scram import (
    describe_user_scram_credentials,
    describe_user_scram_credentials_error,
)
from metadata.image import MetadataImage


class DescribeScramHandler:
    """DescribeUserScramCredentials from the current image: mechanisms and iterations."""

    def __init__(self, image: Callable[[], MetadataImage]) -> None:
        self._image = image

    def register(self, router: RequestRouter) -> None:
        router.register(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, self.handle,
                        describe_user_scram_credentials_error)

    async def handle(self, request: DecodedRequest,
                     ctx: RequestContext) -> DescribeUserScramCredentialsResponseData:
        return describe_user_scram_credentials(self._image(), request.body)
