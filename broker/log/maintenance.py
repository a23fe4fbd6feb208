"""The periodic log jobs: retention, compaction, time-based flush and checkpoints.

Each runs on its own period (Kafka's keys and defaults) after Kafka's initial delay, on the
trio thread like every other log access. The cleaner alone lets other tasks run while it works
(a pass over a large dirty section would otherwise stall produce and fetch); its passes only
read inactive segments and give up when the log changes under them.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Callable

import trio

from broker.log import offset_map
from broker.log.manager import LogManager
from broker.periodic import run_every

if TYPE_CHECKING:
    from broker.config import ServerConfig

# Kafka's LogManager.InitialTaskDelayMs.
INITIAL_TASK_DELAY_MS = 30_000
_NEVER_MS = 2**62


class LogMaintenance:
    """Runs LogManager's periodic jobs until cancelled."""

    def __init__(self, log_manager: LogManager, config: "ServerConfig") -> None:
        self._logs = log_manager
        self.retention_check_ms = config.log_retention_check_interval_ms
        self.cleaner_backoff_ms = config.log_cleaner_backoff_ms
        self.cleaner_enabled = config.log_cleaner_enable
        self.cleaner_map_capacity = offset_map.capacity(
            config.log_cleaner_dedupe_buffer_size,
            config.log_cleaner_io_buffer_load_factor,
        )
        self.flush_check_ms = config.log_flush_scheduler_interval_ms
        self.checkpoint_ms = config.log_flush_offset_checkpoint_interval_ms
        self.initial_delay_ms = INITIAL_TASK_DELAY_MS

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._every, "retention", self.retention_check_ms,
                               self._logs.run_retention)
            if self.cleaner_enabled:
                nursery.start_soon(self._every, "cleaner", self.cleaner_backoff_ms,
                                   functools.partial(self._logs.run_cleaner,
                                                     map_capacity=self.cleaner_map_capacity))
            nursery.start_soon(self._every, "flush", self.flush_check_ms, self._logs.flush_due)
            nursery.start_soon(self._every, "checkpoint", self.checkpoint_ms,
                               lambda _now: self._logs.checkpoint_off_loop())
            task_status.started()

    async def _every(self, name: str, period_ms: int, job: Callable[[int], object]) -> None:
        if period_ms >= _NEVER_MS:
            return
        await run_every(f"log {name}", period_ms, job,
                        first_delay_ms=min(self.initial_delay_ms, period_ms))
