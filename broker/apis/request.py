"""What every handler receives (the request and its context) and the router that dispatches
each request through the one authorization hook to its API's handler.

A handler answers with a response body; when it fails, or the hook refuses the request, the
answer is its API's error body (defined once, in the API family's module).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping, Protocol

import trio

from clients.protocol.messages import request_class

logger = logging.getLogger(__name__)

# Kafka's principal of an unauthenticated connection (KafkaPrincipal.ANONYMOUS).
ANONYMOUS_PRINCIPAL = "User:ANONYMOUS"
UNKNOWN_SERVER_ERROR = -1
UNSUPPORTED_VERSION = 35
# A request handled in this long or longer is followed by checkpoints (`RequestRouter.dispatch`).
LONG_REQUEST_S = 0.05


class DecodedRequest(Protocol):
    """What `clients.protocol.decode_request` returns."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: dict
    header_version: int


@dataclass
class ConnectionContext:
    """Per-connection facts; `scratch` is the connection's own dict (e.g. SASL state),
    discarded when the connection closes."""

    connection_id: int
    listener_name: str
    security_protocol: str
    peer: tuple[str, int]
    principal: str = ANONYMOUS_PRINCIPAL
    scratch: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RequestContext:
    """The one context every handler receives (Kafka's RequestContext): where the request
    came from, who sent it, and the connection's scratch state."""

    listener_name: str
    security_protocol: str
    principal: str
    client_id: str | None
    api_version: int
    peer: tuple[str, int]
    connection_id: int
    scratch: dict[str, Any]

    @classmethod
    def of(cls, connection: ConnectionContext, request: DecodedRequest) -> "RequestContext":
        return cls(connection.listener_name, connection.security_protocol,
                   connection.principal, request.client_id, request.api_version,
                   connection.peer, connection.connection_id, connection.scratch)


class CloseConnection(Exception):
    """Raised by a handler whose request cannot be answered, so the connection must close
    once the responses before it are sent (Kafka closes an acks=0 producer's connection when
    its produce fails: the closed connection is the only error such a client ever sees)."""


class CloseAfterResponse(CloseConnection):
    """Raised by a handler whose response must be sent and the connection then closed
    (a failed SASL step: Kafka answers it, then closes)."""

    def __init__(self, reason: str, body: Any) -> None:
        super().__init__(reason)
        self.body = body


# Returns the response body, or None when no response is sent (Produce with acks=0).
Handler = Callable[[DecodedRequest, RequestContext], Awaitable[dict | None]]
# Told of every answered request: the request, its response body, milliseconds taken.
RequestObserver = Callable[["DecodedRequest", "dict | None", float], None]


class ErrorBody(Protocol):
    """Builds an API's response carrying `code` everywhere Kafka puts a request-wide error,
    from the request body (every field at its default when it could not be decoded) at
    `version`: the API's request message."""

    def __call__(self, body: Any, version: int, code: int,
                 message: str | None = None) -> Any: ...


def _empty_body(api_key: int) -> Any:
    """The body of a request that could not be decoded: its message, every field at its
    default."""
    return request_class(api_key)()


def default_error_body(body: Mapping[str, Any], version: int, code: int,
                       message: str | None = None) -> dict[str, Any]:
    """Kafka's generic error answer: the top-level error code, every other field default."""
    return {"error_code": code}


class Authorizer(Protocol):
    """The hook every request passes before its handler: NONE (0) lets it through, any
    other code is answered with the API's error body."""

    def authorize(self, request: DecodedRequest, ctx: RequestContext) -> int: ...


class AllowAll:
    """Authorizes every request (the default until an authorizer is configured)."""

    def authorize(self, request: DecodedRequest, ctx: RequestContext) -> int:
        return 0


class RequestRouter:
    """Maps API keys to handlers and their error bodies; `dispatch` answers one request."""

    def __init__(self, authorizer: Authorizer | None = None) -> None:
        self._handlers: dict[int, Handler] = {}
        self._error_bodies: dict[int, ErrorBody] = {}
        self.authorizer: Authorizer = authorizer if authorizer is not None else AllowAll()
        self.observer: RequestObserver | None = None

    def register(self, api_key: int, handler: Handler,
                 error_body: ErrorBody = default_error_body) -> None:
        """Route `api_key` to `handler`, answering failures with `error_body`."""
        self._handlers[int(api_key)] = handler
        self._error_bodies[int(api_key)] = error_body

    def wrap(self, api_key: int, wrapper: Callable[[Handler], Handler]) -> None:
        """Replace `api_key`'s handler with `wrapper(handler)` (its error body stays)."""
        self._handlers[int(api_key)] = wrapper(self._handlers[int(api_key)])

    def handler_for(self, api_key: int) -> Handler | None:
        return self._handlers.get(int(api_key))

    def error_body(self, api_key: int, request: DecodedRequest | None, error_code: int,
                   version: int = 0) -> dict:
        builder = self._error_bodies.get(int(api_key), default_error_body)
        if request is None:
            return builder(_empty_body(api_key), version, error_code)
        return builder(request.body, request.api_version, error_code)

    def api_keys(self) -> frozenset[int]:
        return frozenset(self._handlers)

    def __contains__(self, api_key: object) -> bool:
        return api_key in self._handlers

    async def dispatch(self, request: DecodedRequest, connection: ConnectionContext
                       ) -> dict | None:
        """The response body of `request` (None: no response). Raises CloseConnection.

        After a request that took long (a large one, or one that waited), the other tasks
        run before its accounting and again before its answer is encoded: for a request
        naming 100,000 partitions each is a stretch of its own, not one long one."""
        started = time.perf_counter()
        try:
            body = await self._answer(request, connection)
        except BaseException:
            if self.observer is not None:
                self.observer(request, None, (time.perf_counter() - started) * 1000)
            raise
        elapsed_s = time.perf_counter() - started
        long = elapsed_s >= LONG_REQUEST_S
        if long:
            await trio.lowlevel.checkpoint()
        if self.observer is not None:
            self.observer(request, body, elapsed_s * 1000)
        if long:
            await trio.lowlevel.checkpoint()
        return body

    async def _answer(self, request: DecodedRequest, connection: ConnectionContext
                      ) -> dict | None:
        handler = self._handlers.get(request.api_key)
        if handler is None:
            return self.error_body(request.api_key, request, UNSUPPORTED_VERSION)
        ctx = RequestContext.of(connection, request)
        refused = self.authorizer.authorize(request, ctx)
        if refused:
            return self.error_body(request.api_key, request, refused)
        try:
            return await handler(request, ctx)
        except CloseConnection:
            raise
        except Exception:
            logger.exception("handler for api %d v%d failed (correlation id %d)",
                             request.api_key, request.api_version, request.correlation_id)
            return self.error_body(request.api_key, request, UNKNOWN_SERVER_ERROR)
