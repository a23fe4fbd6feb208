"""The `/metrics` endpoint: Prometheus' text format over HTTP, served on trio.

prometheus-client renders the collectors (its ASGI app, so content negotiation and gzip are
its own); hypercorn serves that app in a trio task of the node, on a socket the node binds
at start-up with its other listeners, so a taken port stops start-up naming the key.
"""

from __future__ import annotations

import logging
import os
import socket
from typing import Any, Awaitable, Callable

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from prometheus_client import CollectorRegistry, make_asgi_app

from broker.config.metrics_listener import METRICS_PATH, MetricsListener

logger = logging.getLogger(__name__)

Asgi = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


def metrics_app(registry: CollectorRegistry) -> Asgi:
    """prometheus-client's app on GET /metrics; 404 elsewhere, 405 for other methods."""
    render = make_asgi_app(registry)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
        elif scope["path"] != METRICS_PATH:
            await _plain(send, 404, b"not found: the metrics are at /metrics\n")
        elif scope["method"] not in ("GET", "HEAD"):
            await _plain(send, 405, b"method not allowed\n")
        else:
            await render(scope, receive, send)

    return app


async def _lifespan(receive: Any, send: Any) -> None:
    """Nothing to set up or tear down: acknowledge start-up and shutdown."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _plain(send: Any, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
    await send({"type": "http.response.body", "body": body})


class MetricsEndpoint:
    """Serves `registry` at `listener`; `bind` first (at start-up), then run `serve`."""

    def __init__(self, listener: MetricsListener, registry: CollectorRegistry) -> None:
        self.listener = listener
        self.registry = registry
        self._socket: socket.socket | None = None
        self.address: tuple[str, int] | None = None

    def bind(self) -> tuple[str, int]:
        """Bind the listening socket now; OSError names the listener when it cannot."""
        if self._socket is None:
            host, port = self.listener.host, self.listener.port
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((host, port))
                sock.listen(128)
                sock.setblocking(False)
            except OSError as exc:
                sock.close()
                raise OSError(exc.errno, f"cannot listen on {self.listener.uri()} "
                              f"({exc.strerror or exc})") from exc
            self._socket = sock
            bound = sock.getsockname()
            self.address = (bound[0], bound[1])
        assert self.address is not None
        return self.address

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    async def serve(self, *, task_status: trio.TaskStatus[tuple[str, int]]
                    = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled."""
        address = self.bind()
        assert self._socket is not None
        config = Config()
        # hypercorn owns (and closes) a duplicate; the original is closed here.
        config.bind = [f"fd://{os.dup(self._socket.fileno())}"]
        config.accesslog = None
        config.errorlog = logger
        config.graceful_timeout = 1.0
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(serve, metrics_app(self.registry), config)
                logger.info("serving metrics on http://%s:%d%s", address[0], address[1],
                            METRICS_PATH)
                task_status.started(address)
        finally:
            self.close()
