"""Request dispatch: ApiKey -> async handler, and what a handler sees of its connection."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Protocol


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
    """Per-connection facts handed to every handler; `scratch` is the connection's own dict
    (e.g. SASL state), discarded when the connection closes."""

    connection_id: int
    listener_name: str
    security_protocol: str
    peer: tuple[str, int]
    scratch: dict[str, Any] = field(default_factory=dict)


class CloseConnection(Exception):
    """Raised by a handler whose request cannot be answered, so the connection must close
    once the responses before it are sent (Kafka closes an acks=0 producer's connection when
    its produce fails: the closed connection is the only error such a client ever sees)."""


# Returns the response body, or None when no response is sent (Produce with acks=0).
Handler = Callable[[DecodedRequest, ConnectionContext], Awaitable[dict | None]]
# Builds a response body carrying `error_code` for an API whose top-level shape is special.
ErrorBodyBuilder = Callable[[DecodedRequest | None, int], dict]


def default_error_body(request: DecodedRequest | None, error_code: int) -> dict:
    """Kafka's generic error answer: the top-level error code, every other field default."""
    return {"error_code": error_code}


class RequestRouter:
    """Maps API keys to handlers (and optional per-API error-body builders)."""

    def __init__(self) -> None:
        self._handlers: dict[int, Handler] = {}
        self._error_bodies: dict[int, ErrorBodyBuilder] = {}

    def register(self, api_key: int, handler: Handler,
                 error_body: ErrorBodyBuilder | None = None) -> None:
        """Route `api_key` to `handler`; `error_body` builds this API's error response when
        the top-level `error_code` alone does not fit its schema."""
        self._handlers[int(api_key)] = handler
        if error_body is not None:
            self._error_bodies[int(api_key)] = error_body

    def handler_for(self, api_key: int) -> Handler | None:
        return self._handlers.get(int(api_key))

    def error_body(self, api_key: int, request: DecodedRequest | None, error_code: int) -> dict:
        builder = self._error_bodies.get(int(api_key), default_error_body)
        return builder(request, error_code)

    def api_keys(self) -> frozenset[int]:
        return frozenset(self._handlers)

    def __contains__(self, api_key: object) -> bool:
        return api_key in self._handlers
