"""The clocks, in milliseconds: the one module that reads the system's time for them.

Two clocks, kept apart as Kafka's `Time` keeps them. The wall clock gives timestamps that
leave the process or outlive it: record and log-append times, commit and expiry times in
internal topics, times a tool prints. The monotonic clock measures intervals and deadlines
inside the process (linger, backoff, session expiry, rates): it never jumps when the system
time is set, and only the difference of two readings means anything. Code that tests drive
with a fake clock takes one as a parameter whose default is one of these.

It imports nothing of the project, so every package may import it.
"""

from __future__ import annotations

import time


def wall_clock_ms() -> int:
    """Milliseconds since the Unix epoch (Kafka's `Time.milliseconds()`)."""
    return time.time_ns() // 1_000_000


def monotonic_ms() -> float:
    """Milliseconds on a clock that never goes back, with sub-millisecond precision
    (Kafka's `Time.hiResClockMs()`)."""
    return time.monotonic() * 1000.0
