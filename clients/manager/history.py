"""Lag over time: the console samples each group's total lag while it runs and keeps a
bounded history per group (pure: the caller supplies the time)."""

from __future__ import annotations

from collections import deque

DEFAULT_POINTS = 360


class LagHistory:
    """The last ``max_points`` (time in s, total lag) samples of each group."""

    def __init__(self, max_points: int = DEFAULT_POINTS) -> None:
        self.max_points = max_points
        self._series: dict[str, deque[tuple[float, int]]] = {}

    def record(self, group: str, at: float, lag: int) -> None:
        series = self._series.setdefault(group, deque(maxlen=self.max_points))
        series.append((at, lag))

    def series(self, group: str) -> list[tuple[float, int]]:
        return list(self._series.get(group, ()))

    def forget_except(self, groups: set[str]) -> None:
        """Drop the history of groups that no longer exist."""
        for name in [g for g in self._series if g not in groups]:
            del self._series[name]
