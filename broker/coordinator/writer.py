"""One internal-topic partition's writes, in the order the coordinator decided them.

Some coordinators' writes must reach the log in decision order, each after the last one
committed (a group's later generation must not be overwritten by an earlier one), so each
loaded partition has a single writer task draining a FIFO queue, one write at a time. A
write is settled when its append is committed or has failed. A caller that waits for its
write (an offset commit) appends it in its own task when nothing is queued or in flight: two
task switches fewer on every commit.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Callable, Generic, TypeVar

import trio

from broker.coordinator.log import CoordinatorLog, CoordinatorLogError
from broker.parking import parked
from clients.protocol import ErrorCode

logger = logging.getLogger(__name__)

W = TypeVar("W")

# Settles a write with its final code (0 when committed): runs what follows it.
Settle = Callable[[W, int], None]


class PendingWrite(Generic[W]):
    """A queued write; `done` is set once `code` is final (0 when committed)."""

    __slots__ = ("write", "done", "code")

    def __init__(self, write: W) -> None:
        self.write = write
        self.done = trio.Event()
        self.code = -1


def finish(item: PendingWrite[W], code: int, settle: Settle[W]) -> None:
    """Settle `item` with `code`: run what follows it, then wake whoever waits on it."""
    item.code = int(code)
    try:
        settle(item.write, item.code)
    finally:
        item.done.set()


class OrderedWriter(Generic[W]):
    """Appends queued writes to partition `partition` of `topic`, one at a time: `encode`
    makes a write's record batch (it may raise CoordinatorLogError), `settle` runs once the
    write is committed or has failed."""

    def __init__(self, topic: str, partition: int, log: CoordinatorLog,
                 encode: Callable[[W], bytes], settle: Settle[W]) -> None:
        self.topic = topic
        self.partition = partition
        self._log = log
        self._encode = encode
        self._settle = settle
        self._queue: deque[PendingWrite[W]] = deque()
        self._wake = trio.Event()
        self._cancel = trio.CancelScope()
        # The scope of a write appended in its caller's task, while one is in flight.
        self._direct: trio.CancelScope | None = None
        self.closed = False

    def submit(self, write: W) -> PendingWrite[W]:
        item = PendingWrite(write)
        if self.closed:
            finish(item, ErrorCode.NOT_COORDINATOR, self._settle)
            return item
        self._queue.append(item)
        self._wake.set()
        return item

    async def write(self, write: W) -> PendingWrite[W]:
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
        finish(item, code, self._settle)
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
                    finish(item, code, self._settle)

    async def _append(self, write: W) -> int:
        try:
            await self._log.append(self.partition, self._encode(write))
            return ErrorCode.NONE
        except CoordinatorLogError as exc:
            logger.warning("%s-%d: a write failed: %s", self.topic, self.partition, exc)
            return exc.error_code

    def close(self) -> None:
        """Stop; queued (and in-flight) writes fail with NOT_COORDINATOR."""
        self.closed = True
        self._cancel.cancel()
        if self._direct is not None:
            self._direct.cancel()
        while self._queue:
            finish(self._queue.popleft(), ErrorCode.NOT_COORDINATOR, self._settle)
