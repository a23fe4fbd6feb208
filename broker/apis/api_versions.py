"""The ApiVersions handler: advertise exactly the routed APIs the codec supports."""

from __future__ import annotations

from typing import Mapping

from broker.apis.request import DecodedRequest, Handler, RequestContext, RequestRouter
from clients.protocol.messages.api_versions import ApiVersionsResponseData

API_VERSIONS_KEY = 18


def api_versions_body(router: RequestRouter, supported: Mapping[int, tuple[int, int]],
                      error_code: int = 0) -> ApiVersionsResponseData:
    """ApiVersions response body: routed APIs intersected with the codec's versions."""
    api_keys = [
        ApiVersionsResponseData.ApiVersion(
            api_key=int(key), min_version=supported[key][0], max_version=supported[key][1])
        for key in sorted(router.api_keys())
        if key in supported
    ]
    return ApiVersionsResponseData(error_code=error_code, api_keys=api_keys, throttle_time_ms=0)


def make_api_versions_handler(router: RequestRouter,
                              supported: Mapping[int, tuple[int, int]]) -> Handler:
    """A handler answering from the router's registrations at call time."""
    normalised = {int(k): (int(v[0]), int(v[1])) for k, v in supported.items()}

    async def handle_api_versions(request: DecodedRequest,
                                  ctx: RequestContext) -> ApiVersionsResponseData:
        return api_versions_body(router, normalised)

    return handle_api_versions


def install_api_versions(router: RequestRouter,
                         supported: Mapping[int, tuple[int, int]] | None = None) -> None:
    """Register the ApiVersions handler; `supported` defaults to the codec's table."""
    if supported is None:
        from clients.protocol import SUPPORTED_VERSIONS

        supported = SUPPORTED_VERSIONS
    router.register(API_VERSIONS_KEY, make_api_versions_handler(router, supported))
