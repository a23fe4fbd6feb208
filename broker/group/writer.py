"""One `__consumer_offsets` partition's writes, in the order the coordinator decided them.

Group writes must reach the log in decision order (a later generation must not be
overwritten by an earlier one), so each loaded partition has a single writer task draining
a FIFO queue, one write at a time. A write's `then` runs when its append is committed or
has failed. A caller that waits for its write (an offset commit) appends it in its own task
when nothing is queued or in flight: two task switches fewer on every commit.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Callable

import trio

from broker.group.model import Effects, GroupWrite
from broker.coordinator.log import CoordinatorLog, CoordinatorLogError
from broker.group.records import build_batch
from broker.parking import parked
from clients.protocol import ErrorCode
from clients.clock import wall_clock_ms

logger = logging.getLogger(__name__)


class PendingWrite:
    """A queued write; `done` is set once `code` is final (0 when committed)."""

    __slots__ = ("write", "done", "code")

    def __init__(self, write: GroupWrite) -> None:
        self.write = write
        self.done = trio.Event()
        self.code = -1


def finish(item: PendingWrite, code: int, apply: Callable[[Effects], None]) -> None:
    """Settle `item` with `code`: run its continuation, then wake whoever waits on it."""
    item.code = int(code)
    try:
        if item.write.then is not None:
            effects = item.write.then(item.code)
            if effects.replies or effects.writes or item.write.reschedules:
                apply(effects)
    finally:
        item.done.set()


class PartitionWriter:
    """Appends queued group writes to one partition, one at a time."""

    def __init__(self, partition: int, log: CoordinatorLog, apply: Callable[[Effects], None]) -> None:
        self.partition = partition
        self._log = log
        self._apply = apply
        self._queue: deque[PendingWrite] = deque()
        self._wake = trio.Event()
        self._cancel = trio.CancelScope()
        # The scope of a write appended in its caller's task, while one is in flight.
        self._direct: trio.CancelScope | None = None
        self.closed = False

    def submit(self, write: GroupWrite) -> PendingWrite:
        item = PendingWrite(write)
        if self.closed:
            finish(item, ErrorCode.NOT_COORDINATOR, self._apply)
            return item
        self._queue.append(item)
        self._wake.set()
        return item

    async def write(self, write: GroupWrite) -> PendingWrite:
        """Submit `write` and wait until it is settled."""
        if self.closed or self._queue or self._direct is not None:
            item = self.submit(write)
            parked()  # waits for the writes before it and their replication
            await item.done.wait()
            return item
        item = PendingWrite(write)
        code: int = ErrorCode.NOT_COORDINATOR
        # Shielded: a caller that goes away (its connection closed) still lets the write
        # settle, as a queued one would; only `close` cuts it short.
        with trio.CancelScope(shield=True) as scope:
            self._direct = scope
            try:
                code = await self._append(write)
            finally:
                self._direct = None
                self._wake.set()  # what was queued meanwhile is the writer task's again
        if self.closed:
            code = ErrorCode.NOT_COORDINATOR
        finish(item, code, self._apply)
        return item

    async def run(self) -> None:
        """Drain the queue until `close`."""
        with self._cancel:
            while True:
                while not self._queue or self._direct is not None:
                    self._wake = trio.Event()
                    await self._wake.wait()
                item = self._queue[0]
                code = await self._append(item.write)
                if self._queue and self._queue[0] is item:
                    self._queue.popleft()
                    finish(item, code, self._apply)

    async def _append(self, write: GroupWrite) -> int:
        try:
            sequence = 0
            if write.producer is not None:
                sequence = self._log.next_sequence(self.partition, *write.producer)
            await self._log.append(self.partition,
                                   build_batch(write.entries, wall_clock_ms(),
                                               write.producer, sequence))
            return ErrorCode.NONE
        except CoordinatorLogError as exc:
            logger.warning("__consumer_offsets-%d: write of %d record(s) failed: %s",
                           self.partition, len(write.entries), exc)
            return exc.error_code

    def close(self) -> None:
        """Stop; queued (and in-flight) writes fail with NOT_COORDINATOR."""
        self.closed = True
        self._cancel.cancel()
        if self._direct is not None:
            self._direct.cancel()
        while self._queue:
            finish(self._queue.popleft(), ErrorCode.NOT_COORDINATOR, self._apply)
