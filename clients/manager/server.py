"""Serves the console with hypercorn on trio."""

from __future__ import annotations

import logging
import signal
from functools import partial

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from clients.manager.app import ManagerSettings, build_app

logger = logging.getLogger(__name__)


def hypercorn_config(host: str, port: int) -> Config:
    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = logger
    return config


async def _stop_signal() -> None:
    """Returns at SIGTERM or SIGINT: hypercorn then shuts down gracefully."""
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            return


def run_manager(host: str, port: int, settings: ManagerSettings) -> None:
    """Serve until SIGTERM or SIGINT."""
    trio.run(partial(serve, build_app(settings), hypercorn_config(host, port), mode="asgi",
                     shutdown_trigger=_stop_signal))
