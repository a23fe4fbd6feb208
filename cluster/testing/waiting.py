"""Waiting on a condition with a deadline, for the tests, the raftka_cluster plugin and the
benchmarks."""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_for(probe: Callable[[], T | None], what: str, timeout: float = 20.0,
             interval: float = 0.05) -> T:
    """``probe()``'s first truthy result, polled every ``interval`` seconds; TimeoutError
    naming ``what`` (and the last result) once ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what} "
                               f"(last probe: {result!r})")
        time.sleep(interval)
