"""A small trio Kafka-protocol server for client tests, speaking the real codec.

Each API is answered by a handler ``(request) -> dict | bytes | None | CLOSE`` (sync or
async): a dict is encoded as the response body, bytes are sent as a raw frame, None sends
nothing, CLOSE drops the connection. ApiVersions is answered from ``versions``; a request
newer than ``api_versions_max`` gets Kafka's UNSUPPORTED_VERSION answer with a v0 body.
"""

from __future__ import annotations

import inspect
import struct
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import trio

from clients.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    ErrorCode,
    Request,
    decode_request,
    encode_response,
)
from clients.protocol.messages.api_versions import ApiVersionsResponseData

CLOSE = object()
Handler = Callable[[Request], Any | Awaitable[Any]]


def all_versions() -> dict[int, tuple[int, int]]:
    return {int(k): v for k, v in SUPPORTED_VERSIONS.items()}


@dataclass
class StubBroker:
    handlers: dict[int, Handler] = field(default_factory=dict)
    versions: dict[int, tuple[int, int]] = field(default_factory=all_versions)
    api_versions_max: int = 3
    received: list[Request] = field(default_factory=list)
    connections: int = 0
    port: int = 0
    _scope: trio.CancelScope | None = None

    async def start(self, nursery: trio.Nursery) -> StubBroker:
        """Listen on 127.0.0.1 (a free port) until ``stop``."""
        self.port = await nursery.start(self._run)
        return self

    def stop(self) -> None:
        """Close the listener and every open connection at once, like a crashed node."""
        if self._scope is not None:
            self._scope.cancel()

    def requests(self, api_key: int) -> list[Request]:
        return [r for r in self.received if r.api_key == api_key]

    async def _run(self, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        with trio.CancelScope() as scope:
            self._scope = scope
            listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(trio.serve_listeners, self._serve, listeners)
                task_status.started(listeners[0].socket.getsockname()[1])

    async def _serve(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        buffer = bytearray()
        while True:
            while len(buffer) < 4 or len(buffer) < 4 + struct.unpack_from(">i", buffer)[0]:
                try:
                    data = await stream.receive_some(1 << 16)
                except trio.BrokenResourceError:
                    return
                if not data:
                    return
                buffer += data
            size = struct.unpack_from(">i", buffer)[0]
            frame, buffer = bytes(buffer[4:4 + size]), buffer[4 + size:]
            answer = await self._answer(frame)
            if answer is CLOSE:
                return
            if answer is not None:
                try:
                    await stream.send_all(struct.pack(">i", len(answer)) + answer)
                except trio.BrokenResourceError:
                    return

    async def _answer(self, frame: bytes) -> Any:
        request = decode_request(frame)
        self.received.append(request)
        if request.api_key == ApiKey.API_VERSIONS and request.api_key not in self.handlers:
            return self._api_versions(request)
        handler = self.handlers.get(request.api_key)
        if handler is None:
            return encode_response(request.api_key, request.api_version,
                                   request.correlation_id, {})
        body = handler(request)
        if inspect.isawaitable(body):
            body = await body
        if isinstance(body, dict):
            return encode_response(request.api_key, request.api_version,
                                   request.correlation_id, body)
        return body

    def _api_versions(self, request: Request) -> bytes:
        keys = [ApiVersionsResponseData.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                for k, (lo, hi) in sorted(self.versions.items())]
        if request.api_version > self.api_versions_max:
            return encode_response(ApiKey.API_VERSIONS, 0, request.correlation_id,
                                   ApiVersionsResponseData(
                                       error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=keys))
        return encode_response(ApiKey.API_VERSIONS, request.api_version,
                               request.correlation_id, ApiVersionsResponseData(api_keys=keys))
