"""Log directories that failed (Kafka's LogDirFailureChannel): which are offline, and the
parts that act on a failure (heartbeats report offline dirs; with none left online the
broker shuts down)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

logger = logging.getLogger(__name__)

FailureListener = Callable[[Path], None]


class LogDirFailures:
    """The offline log dirs of one broker, with listeners told of each new failure."""

    def __init__(self) -> None:
        self._offline: dict[Path, str] = {}
        self._listeners: list[FailureListener] = []

    def subscribe(self, listener: FailureListener) -> None:
        self._listeners.append(listener)

    def mark_offline(self, path: Path, reason: str) -> bool:
        """Record `path` as failed; False when it already was."""
        if path in self._offline:
            return False
        self._offline[path] = reason
        logger.error("log directory %s is offline: %s", path, reason)
        for listener in list(self._listeners):
            listener(path)
        return True

    def is_offline(self, path: Path) -> bool:
        return path in self._offline

    @property
    def offline(self) -> list[Path]:
        return list(self._offline)
