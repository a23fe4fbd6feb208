"""The periodic log jobs: retention, compaction, time-based flush and checkpoints.

Each runs on its own period (Kafka's keys and defaults) after Kafka's initial delay, on the
trio thread like every other log access. The cleaner alone lets other tasks run while it works
(a pass over a large dirty section would otherwise stall produce and fetch); its passes only
read inactive segments and give up when the log changes under them.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable, Mapping

import trio

from broker.log import offset_map
from broker.log.manager import LogManager
from broker.periodic import run_every
from clients.clock import wall_clock_ms

logger = logging.getLogger(__name__)

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
        # Dynamic (see `reconfigure`): read by the cleaner loop before each pass.
        self.cleaner_threads = int(config.get("log.cleaner.threads"))  # type: ignore[call-overload]
        self.cleaner_io_max_bytes_per_second = float(
            config.get("log.cleaner.io.max.bytes.per.second"))  # type: ignore[arg-type]
        self._static = {key: config.get(key) for key in (
            "log.cleaner.backoff.ms", "log.cleaner.threads",
            "log.cleaner.io.max.bytes.per.second", "log.cleaner.dedupe.buffer.size",
            "log.cleaner.io.buffer.load.factor")}
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
                nursery.start_soon(self._clean_forever)
            nursery.start_soon(self._every, "flush", self.flush_check_ms, self._logs.flush_due)
            nursery.start_soon(self._every, "checkpoint", self.checkpoint_ms,
                               lambda _now: self._logs.checkpoint_off_loop())
            task_status.started()

    async def _clean_forever(self) -> None:
        """Kafka's cleaner loop: a pass, then log.cleaner.backoff.ms; the knobs are read
        afresh each time so dynamic changes apply from the next pass. With
        log.cleaner.threads=0 nothing is cleaned (as in Kafka); passes run one at a time
        on the event loop whatever the count."""
        await trio.sleep(min(self.initial_delay_ms, self.cleaner_backoff_ms) / 1000)
        while True:
            if self.cleaner_threads > 0:
                try:
                    await self._logs.run_cleaner(
                        wall_clock_ms(), map_capacity=self.cleaner_map_capacity,
                        io_max_bytes_per_second=self.cleaner_io_max_bytes_per_second)
                except Exception:
                    logger.exception("log cleaner job failed")
            await trio.sleep(self.cleaner_backoff_ms / 1000)

    def reconfigure(self, values: Mapping[str, str]) -> None:
        """Apply the dynamic log.cleaner.* values (raw strings, already validated); a key
        absent from `values` goes back to the static value."""
        def pick(key: str, parse: Callable[[str], object]) -> object:
            return parse(values[key]) if key in values else self._static[key]

        self.cleaner_backoff_ms = int(pick("log.cleaner.backoff.ms", int))  # type: ignore[call-overload]
        self.cleaner_threads = int(pick("log.cleaner.threads", int))  # type: ignore[call-overload]
        self.cleaner_io_max_bytes_per_second = float(
            pick("log.cleaner.io.max.bytes.per.second", float))  # type: ignore[arg-type]
        self.cleaner_map_capacity = offset_map.capacity(
            int(pick("log.cleaner.dedupe.buffer.size", int)),  # type: ignore[call-overload]
            float(pick("log.cleaner.io.buffer.load.factor", float)))  # type: ignore[arg-type]

    async def _every(self, name: str, period_ms: int, job: Callable[[int], object]) -> None:
        if period_ms >= _NEVER_MS:
            return
        await run_every(f"log {name}", period_ms, job,
                        first_delay_ms=min(self.initial_delay_ms, period_ms))
