"""Serves the console with hypercorn on trio."""

from __future__ import annotations

import logging
import signal
import socket
from functools import partial

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from clients.manager.app import ManagerSettings, build_app
from clients.manager.bind import ManagerConfigError
from clients.manager.tls import ConsoleTls

logger = logging.getLogger(__name__)


def _reason(error: OSError) -> str:
    text = error.strerror or str(error)
    return text[:1].lower() + text[1:]


def open_listener(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` for the console to serve on (hypercorn listens on
    it); ManagerConfigError naming the address when it cannot be bound: taken, not an
    address of this machine, or a name that does not resolve."""
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        found = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError as exc:  # socket.gaierror included
        raise ManagerConfigError(f"cannot listen on {address}: {_reason(exc)}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(found[0][4])
    except OSError as exc:
        sock.close()
        raise ManagerConfigError(f"cannot listen on {address}: {_reason(exc)}") from None
    return sock


def hypercorn_config(listener: socket.socket, tls: ConsoleTls | None = None) -> Config:
    """Hypercorn serves on ``listener`` (its file descriptor passes to hypercorn), with TLS
    once it has both files (and none in plaintext: ``insecure_bind`` stays empty)."""
    config = Config()
    config.bind = [f"fd://{listener.detach()}"]
    if tls is not None:
        config.certfile, config.keyfile = tls.certfile, tls.keyfile
        if not config.ssl_enabled or config.insecure_bind:
            raise RuntimeError("hypercorn would serve the console without TLS")
    config.accesslog = None
    config.errorlog = logger
    return config


async def _stop_signal() -> None:
    """Returns at SIGTERM or SIGINT: hypercorn then shuts down gracefully."""
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            return


def run_manager(listener: socket.socket, settings: ManagerSettings,
                tls: ConsoleTls | None = None) -> None:
    """Serve on ``listener`` (see ``open_listener``) until SIGTERM or SIGINT."""
    trio.run(partial(serve, build_app(settings), hypercorn_config(listener, tls), mode="asgi",
                     shutdown_trigger=_stop_signal))
