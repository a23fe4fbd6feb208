"""A flush taken apart so its fsyncs can run off the event loop.

On a slow disk an fsync can take seconds. Done on the event loop (as `PartitionLog.flush`
does), it would hold up every other partition's requests meanwhile. `PartitionLog.take_flush`
gathers, on the loop, duplicates of the descriptors that need an fsync; `flush_off_loop`
syncs them in a worker thread, which touches nothing but those descriptors, then completes
the flush back on the loop. Appends to the same log may go on during the fsync: the
recovery point only moves to the log end offset taken before it began.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol

import trio


@dataclass
class FlushPlan:
    """Descriptors to fsync (owned: `sync` and `close` close them), the log end offset they
    make durable, and when the flush began (perf_counter seconds)."""

    fds: list[int]
    log_end_offset: int
    started: float

    def sync(self) -> None:
        """fsync every descriptor, then close them all; runs in a worker thread."""
        try:
            for fd in self.fds:
                os.fsync(fd)
        finally:
            self.close()

    def close(self) -> None:
        fds, self.fds = self.fds, []
        for fd in fds:
            os.close(fd)


class DeferredFlushLog(Protocol):
    """What `flush_off_loop` needs of a log (PartitionLog has it)."""

    flush_pending: bool

    def take_flush(self) -> FlushPlan: ...

    def flushed(self, plan: FlushPlan) -> None: ...

    def storage_failed(self, exc: OSError) -> Exception: ...


async def flush_off_loop(log: DeferredFlushLog) -> None:
    """Run the flush `log` deferred (`flush_pending`), with its fsyncs in a worker thread;
    KafkaStorageError (the log going offline) when one fails."""
    if not log.flush_pending:
        return
    plan = log.take_flush()
    try:
        await trio.to_thread.run_sync(plan.sync)
    except OSError as exc:
        raise log.storage_failed(exc) from exc
    log.flushed(plan)

