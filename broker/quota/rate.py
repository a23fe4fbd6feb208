"""A sliding-window rate, as Kafka's `Rate` over a `SampledStat` measures it: `samples`
windows of `window_ms` each; the oldest is dropped as time moves on. Pure: the caller passes
the time."""

from __future__ import annotations


class SampledRate:
    """Sum of recent values per second over up to `samples` windows of `window_ms`."""

    __slots__ = ("samples", "window_ms", "_starts", "_values", "_current", "last_record_ms")

    def __init__(self, samples: int = 11, window_ms: int = 1000) -> None:
        if samples < 1 or window_ms < 1:
            raise ValueError("a rate needs at least one sample of at least 1 ms")
        self.samples = samples
        self.window_ms = window_ms
        self._starts: list[int | None] = [None] * samples
        self._values = [0.0] * samples
        self._current = -1
        self.last_record_ms = 0

    def record(self, value: float, now_ms: int) -> None:
        """Add `value` at `now_ms`."""
        current = self._current
        start = self._starts[current] if current >= 0 else None
        if start is None or now_ms >= start + self.window_ms:
            current = self._current = (current + 1) % self.samples
            self._starts[current] = now_ms
            self._values[current] = 0.0
        self._values[current] += value
        self.last_record_ms = now_ms

    def _purge(self, now_ms: int) -> None:
        horizon = now_ms - self.samples * self.window_ms
        for i, start in enumerate(self._starts):
            if start is not None and start < horizon:
                self._starts[i] = None
                self._values[i] = 0.0

    def window_size_ms(self, now_ms: int) -> float:
        """The span the rate divides by: since the oldest live sample began, but at least
        `samples - 1` full windows, so a fresh rate does not spike (Kafka's Rate)."""
        self._purge(now_ms)
        live = [s for s in self._starts if s is not None]
        oldest = min(live) if live else now_ms
        elapsed = now_ms - oldest
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return float(max(elapsed, 1))

    def measure(self, now_ms: int) -> float:
        """Units per second at `now_ms`."""
        window = self.window_size_ms(now_ms)
        return sum(self._values) / window * 1000.0


def throttle_time_ms(observed: float, bound: float, window_ms: float) -> int:
    """How long a client over `bound` must wait for its rate to come back to it (Kafka's
    QuotaUtils.throttleTime): the excess as a share of the bound, times the window."""
    if observed <= bound or bound <= 0:
        return 0
    return int((observed - bound) / bound * window_ms)
