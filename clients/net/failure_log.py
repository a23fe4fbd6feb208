"""Logging a failure that every retry repeats: once, not once per retry."""

from __future__ import annotations

import logging


class RepeatedFailureLog:
    """Logs ``what`` failing at WARNING the first time, at DEBUG while it keeps failing, and
    at INFO when it works again (clients retry every ``retry.backoff.ms``; a line per retry
    would flood the user's terminal)."""

    def __init__(self, logger: logging.Logger, what: str, hint: str = "") -> None:
        self._logger = logger
        self._what = what
        self._hint = hint
        self.failing = False

    def failed(self, error: BaseException) -> None:
        if self.failing:
            self._logger.debug("%s failed: %s", self._what, error)
            return
        self.failing = True
        hint = f" ({self._hint})" if self._hint else ""
        self._logger.warning("%s failed%s: %s", self._what, hint, error)

    def succeeded(self) -> None:
        if self.failing:
            self.failing = False
            self._logger.info("%s works again", self._what)
