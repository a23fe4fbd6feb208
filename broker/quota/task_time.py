"""Time a trio task spends running (not waiting), for request-time quotas.

A trio instrument adds up the steps of the tasks it is asked to track; it is installed only
while some client has a `request_percentage` quota, so it costs nothing otherwise.
"""

from __future__ import annotations

import time

import trio


class TaskTimeMeter(trio.abc.Instrument):
    """Sums the run time of tracked tasks' steps."""

    def __init__(self) -> None:
        # task -> [seconds run so far, start of its current step]
        self._tracked: dict[trio.lowlevel.Task, list[float]] = {}
        self.installed = False

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        entry = self._tracked.get(task)
        if entry is not None:
            entry[1] = time.perf_counter()

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        entry = self._tracked.get(task)
        if entry is not None:
            entry[0] += time.perf_counter() - entry[1]

    def install(self) -> None:
        if not self.installed:
            trio.lowlevel.add_instrument(self)
            self.installed = True

    def uninstall(self) -> None:
        if self.installed:
            trio.lowlevel.remove_instrument(self)
            self.installed = False

    def start(self) -> trio.lowlevel.Task:
        """Track the current task from now on."""
        task = trio.lowlevel.current_task()
        self._tracked[task] = [0.0, time.perf_counter()]
        return task

    def stop(self, task: trio.lowlevel.Task) -> float:
        """Stop tracking `task` (the current one); the seconds it ran since `start`."""
        entry = self._tracked.pop(task)
        return entry[0] + time.perf_counter() - entry[1]
