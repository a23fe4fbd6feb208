"""SaslHandshake (v0-1) and SaslAuthenticate (v0-2).

The connection's SASL session (broker.sasl.session) decides; these handlers translate. On a
listener without SASL both answer ILLEGAL_SASL_STATE, as Kafka does. A failed step is
answered and the connection then closes.
"""

from __future__ import annotations

import logging
from typing import TypeVar

from broker.apis.request import (
    CloseAfterResponse,
    DecodedRequest,
    RequestContext,
    RequestRouter,
)
from broker.sasl.session import SaslSession, Step
from clients.protocol import ApiKey, ErrorCode
from clients.protocol.messages.sasl_authenticate import (
    SaslAuthenticateRequestData,
    SaslAuthenticateResponseData,
)
from clients.protocol.messages.sasl_handshake import (
    SaslHandshakeRequestData,
    SaslHandshakeResponseData,
)

logger = logging.getLogger(__name__)

# The key under which a SASL listener's connection keeps its session (see
# broker.network.connection).
SASL_SESSION = "sasl"

AnyResponse = TypeVar("AnyResponse", SaslHandshakeResponseData, SaslAuthenticateResponseData)


def sasl_handshake_error(body: SaslHandshakeRequestData, version: int, code: int,
                         message: str | None = None) -> SaslHandshakeResponseData:
    return SaslHandshakeResponseData(error_code=code)


def sasl_authenticate_error(body: SaslAuthenticateRequestData, version: int, code: int,
                            message: str | None = None) -> SaslAuthenticateResponseData:
    return SaslAuthenticateResponseData(error_code=code, error_message=message)


def _session(ctx: RequestContext) -> SaslSession | None:
    session = ctx.scratch.get(SASL_SESSION)
    return session if isinstance(session, SaslSession) else None


class SaslHandlers:
    """The two SASL APIs of a broker listener."""

    def register(self, router: RequestRouter) -> None:
        router.register(ApiKey.SASL_HANDSHAKE, self.handshake, sasl_handshake_error)
        router.register(ApiKey.SASL_AUTHENTICATE, self.authenticate, sasl_authenticate_error)

    async def handshake(self, request: DecodedRequest,
                        ctx: RequestContext) -> SaslHandshakeResponseData:
        request_body: SaslHandshakeRequestData = request.body
        session = _session(ctx)
        if session is None:
            return sasl_handshake_error(request_body, request.api_version,
                                        ErrorCode.ILLEGAL_SASL_STATE)
        step = session.handshake(request_body.mechanism, request.api_version)
        body = SaslHandshakeResponseData(error_code=step.error_code,
                                         mechanisms=list(session.enabled_mechanisms))
        return _answer(step, body, ctx, "SaslHandshake")

    async def authenticate(self, request: DecodedRequest,
                           ctx: RequestContext) -> SaslAuthenticateResponseData:
        request_body: SaslAuthenticateRequestData = request.body
        session = _session(ctx)
        if session is None:
            return sasl_authenticate_error(request_body, request.api_version,
                                           ErrorCode.ILLEGAL_SASL_STATE,
                                           "SASL is not enabled on this listener")
        step = session.authenticate(bytes(request_body.auth_bytes))
        body = SaslAuthenticateResponseData(
            error_code=step.error_code, error_message=step.error_message,
            auth_bytes=step.token, session_lifetime_ms=step.session_lifetime_ms)
        if session.authenticated and step.error_code == ErrorCode.NONE:
            logger.debug("connection %d from %s authenticated as User:%s with %s",
                         ctx.connection_id, ctx.peer[0], session.principal_name,
                         session.mechanism)
        return _answer(step, body, ctx, "SaslAuthenticate")


def _answer(step: Step, body: AnyResponse, ctx: RequestContext, api: str) -> AnyResponse:
    if step.close:
        logger.info("%s from %s:%d on %s failed: %s", api, ctx.peer[0], ctx.peer[1],
                    ctx.listener_name, step.error_message)
        raise CloseAfterResponse(f"{api} failed: {step.error_message}", body)
    return body
