"""The backlog of requests read and not yet handled: their count (`queued.max.requests`) and
their memory (`queued.max.request.bytes`, Kafka's MemoryPool), shared by every connection of
one network server.

A frame's buffer is charged to the pool as it is allocated, before the bytes it holds are
read, so a peer that only announces a large frame is charged for what it has sent. When the
pool is spent, readers wait (nothing more is read from their sockets) until handled requests
give memory back. One frame at a time may still grow past the limit (the pool's reserve), so
a frame larger than what is free, or frames each waiting for the others' memory, never
deadlock: the pool holds at most its size plus one largest frame.

A request gives back its place and its memory when its handler returns, or earlier when it
parks (a long-poll Fetch, an acks=all Produce waiting for replicas): see `broker.parking`.
"""

from __future__ import annotations

import trio


class Charge:
    """The pool bytes one frame holds and, once its request is admitted, its place in the
    backlog (`backlog`); given back together, once (`release`)."""

    __slots__ = ("_pool", "bytes", "holds_reserve", "backlog")

    def __init__(self, pool: "MemoryPool") -> None:
        self._pool = pool
        self.bytes = 0
        self.holds_reserve = False
        self.backlog: RequestBacklog | None = None

    def release(self) -> None:
        """Give the bytes (and the reserve, if held) back to the pool and leave the backlog;
        idempotent."""
        if self.bytes or self.holds_reserve:
            self._pool._give_back(self)
        backlog = self.backlog
        if backlog is not None:
            self.backlog = None
            backlog.leave()


class MemoryPool:
    """Bytes of requests read and not yet handled; `limit` <= 0 is unbounded (Kafka's -1)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.bounded = limit > 0
        self.used = 0
        self._reserve_taken = False
        self._released = trio.Event()
        self._waiting = 0

    def charge(self) -> Charge:
        return Charge(self)

    def try_grow(self, charge: Charge, size: int) -> bool:
        """Charge `size` more bytes to `charge` if the pool allows it now."""
        if not self.bounded or charge.holds_reserve or self.used + size <= self.limit:
            self.used += size
            charge.bytes += size
            return True
        if not self._reserve_taken:
            # The pool is spent: one frame at a time may still be read whole, so progress
            # never depends on memory that frames waiting like it hold.
            self._reserve_taken = True
            charge.holds_reserve = True
            self.used += size
            charge.bytes += size
            return True
        return False

    async def grow(self, charge: Charge, size: int) -> None:
        """Charge `size` more bytes, waiting while the pool is spent."""
        while not self.try_grow(charge, size):
            self._waiting += 1
            try:
                await self._released.wait()
            finally:
                self._waiting -= 1

    def _give_back(self, charge: Charge) -> None:
        self.used -= charge.bytes
        charge.bytes = 0
        if charge.holds_reserve:
            charge.holds_reserve = False
            self._reserve_taken = False
        if self._waiting:
            released, self._released = self._released, trio.Event()
            released.set()


class RequestBacklog:
    """At most `limit` requests read and not yet handled (`queued.max.requests`)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.queued = 0
        self._released = trio.Event()
        self._waiting = 0

    def try_enter(self) -> bool:
        if self.queued < self.limit:
            self.queued += 1
            return True
        return False

    async def enter(self) -> None:
        """Take a place, waiting while the backlog is full."""
        while not self.try_enter():
            self._waiting += 1
            try:
                await self._released.wait()
            finally:
                self._waiting -= 1

    def leave(self) -> None:
        self.queued -= 1
        if self._waiting:
            released, self._released = self._released, trio.Event()
            released.set()
