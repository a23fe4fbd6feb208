"""A fixed-bucket histogram cheap enough for hot paths: one bisect and three additions."""

from __future__ import annotations

import bisect
from typing import Sequence

# Milliseconds, spanning a sub-millisecond local request to a full long-poll fetch.
LATENCY_BUCKETS_MS: tuple[float, ...] = (
    0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000)


class Histogram:
    """Counts of observations per bucket (upper bounds inclusive), their sum and count."""

    __slots__ = ("bounds", "_counts", "sum", "count")

    def __init__(self, bounds: Sequence[float] = LATENCY_BUCKETS_MS) -> None:
        self.bounds = tuple(bounds)
        self._counts = [0] * (len(self.bounds) + 1)  # the last one is +Inf
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self._counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value
        self.count += 1

    def cumulative(self) -> list[tuple[str, int]]:
        """Prometheus buckets: (upper bound as text, observations at or below it)."""
        running = 0
        buckets = []
        for bound, count in zip((*self.bounds, float("inf")), self._counts):
            running += count
            buckets.append(("+Inf" if bound == float("inf") else repr(float(bound)), running))
        return buckets
