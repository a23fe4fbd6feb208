"""Periodic background jobs for trio tasks: the log jobs."""

from __future__ import annotations

import inspect
import logging
from typing import Callable

import trio

from clients.clock import wall_clock_ms

logger = logging.getLogger(__name__)


async def run_every(name: str, period_ms: int, job: Callable[[int], object], *,
                    first_delay_ms: int | None = None) -> None:
    """Call ``job(now_ms)`` every ``period_ms`` (the first time after ``first_delay_ms``,
    default one period), awaiting what it returns when that is awaitable. A failing run is
    logged and the next one goes ahead: one bad pass must not end the job for good."""
    await trio.sleep((period_ms if first_delay_ms is None else first_delay_ms) / 1000)
    while True:
        try:
            result = job(wall_clock_ms())
            if inspect.isawaitable(result):
                await result
        except Exception:
            logger.exception("%s job failed", name)
        await trio.sleep(period_ms / 1000)
