"""Serves the console with hypercorn on trio."""

from __future__ import annotations

import logging
import signal
from functools import partial

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from clients.manager.app import ManagerSettings, build_app
from clients.manager.tls import ConsoleTls

logger = logging.getLogger(__name__)


def hypercorn_config(host: str, port: int, tls: ConsoleTls | None = None) -> Config:
    """Hypercorn serves every bind with TLS once it has both files (and none in plaintext:
    ``insecure_bind`` stays empty)."""
    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
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


def run_manager(host: str, port: int, settings: ManagerSettings,
                tls: ConsoleTls | None = None) -> None:
    """Serve until SIGTERM or SIGINT."""
    trio.run(partial(serve, build_app(settings), hypercorn_config(host, port, tls), mode="asgi",
                     shutdown_trigger=_stop_signal))
