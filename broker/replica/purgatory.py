"""Wake-ups for requests that wait on partition state (Kafka's purgatory, minus its timers).

A waiting request (a long-poll Fetch, an acks=all Produce) registers a `Waiter` under the
keys it cares about, re-checks its condition, and sleeps until some key is notified or its
deadline passes. Everything runs on the trio thread: registering before the first check
means no notification can slip between the check and the sleep.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Generic, Hashable, Iterable, Iterator, TypeVar

import trio

K = TypeVar("K", bound=Hashable)


class Waiter(Generic[K]):
    """One waiting request; woken by a notification on any key it watches. It keeps the
    keys notified since its last wait, so a request watching many partitions can re-check
    only the ones that moved."""

    __slots__ = ("_event", "_fired")

    def __init__(self) -> None:
        self._event = trio.Event()
        self._fired: set[K] = set()

    def wake(self, key: K) -> None:
        self._fired.add(key)
        self._event.set()

    async def wait(self, deadline: float = math.inf) -> bool:
        """Sleep until woken or the trio-clock `deadline`; True when woken (then re-armed)."""
        with trio.move_on_at(deadline):
            await self._event.wait()
        if not self._event.is_set():
            return False
        self._event = trio.Event()
        return True

    def take_fired(self) -> set[K]:
        """The keys notified since the last call (or since watching began)."""
        fired, self._fired = self._fired, set()
        return fired


class Purgatory(Generic[K]):
    """Waiters by key; `notify(key)` wakes every waiter watching it."""

    def __init__(self) -> None:
        self._watchers: dict[K, set[Waiter[K]]] = {}
        # Waiting requests by kind ("Produce", "Fetch"): Kafka's purgatory sizes.
        self.waiting: dict[str, int] = {}

    @contextmanager
    def watch(self, keys: Iterable[K], kind: str = "") -> Iterator[Waiter[K]]:
        """Register a new waiter under `keys` for the duration of the block; `kind` names
        the delayed operation in the purgatory size metric."""
        waiter: Waiter[K] = Waiter()
        watched = list(dict.fromkeys(keys))
        for key in watched:
            self._watchers.setdefault(key, set()).add(waiter)
        self.waiting[kind] = self.waiting.get(kind, 0) + 1
        try:
            yield waiter
        finally:
            self.waiting[kind] -= 1
            for key in watched:
                waiters = self._watchers.get(key)
                if waiters is not None:
                    waiters.discard(waiter)
                    if not waiters:
                        del self._watchers[key]

    def notify(self, key: K) -> int:
        """Wake the waiters of `key`; returns how many there were."""
        waiters = self._watchers.get(key)
        if not waiters:
            return 0
        for waiter in waiters:
            waiter.wake(key)
        return len(waiters)

    def watched_keys(self) -> int:
        return len(self._watchers)
