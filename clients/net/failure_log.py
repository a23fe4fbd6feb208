"""Logging a failure that every retry repeats: once, not once per retry."""

from __future__ import annotations

import logging

from clients.net.errors import FatalConnectionError, KafkaConnectionError


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


class UnreachableNotice:
    """Says once, when a client has found no broker reachable for ``after_s`` seconds,
    that it keeps trying (a client retrying quietly until a 60 s timeout would otherwise
    leave its user waiting in silence); after a success it may say so again."""

    def __init__(self, logger: logging.Logger, until: str, after_s: float = 0.5) -> None:
        self._logger = logger
        self._until = until  # how long the client keeps trying, in words
        self._after_s = after_s
        self._since: float | None = None
        self._said = False

    def failed(self, error: BaseException, now: float) -> None:
        """A try at ``now`` (seconds, any clock) failed with ``error``; only unreachable
        brokers count."""
        if not isinstance(error, KafkaConnectionError) or \
                isinstance(error, FatalConnectionError):
            return
        if self._since is None:
            self._since = now
        if not self._said and now - self._since >= self._after_s:
            self._said = True
            self._logger.warning("%s; still trying until %s", error, self._until)

    def succeeded(self) -> None:
        self._since = None
        self._said = False
