"""Telling the user why a group has no coordinator, at a bounded rate (pure: the caller
supplies the time and logs what it is given).

An error answer for a short while is normal (a fresh cluster creates ``__consumer_offsets``
on the first lookup), so nothing is said until the search has failed for ``grace_ms``; no
answer at all (no broker reachable) is said at once. After that the latest reason is
repeated at most every ``interval_ms`` while the search goes on.
"""

from __future__ import annotations

GRACE_MS = 3000
INTERVAL_MS = 30000


class CoordinatorSearchReport:
    """Rate-limited messages about a failing coordinator lookup for one group."""

    def __init__(self, group_id: str, grace_ms: float = GRACE_MS,
                 interval_ms: float = INTERVAL_MS) -> None:
        self.group_id = group_id
        self.grace_ms = grace_ms
        self.interval_ms = interval_ms
        self._failing_since: float | None = None
        self._next_report: float | None = None
        self._reported = False

    def failed(self, reason: str, now: float, unanswered: bool = False) -> str | None:
        """A lookup failed (``unanswered``: no broker answered it); returns the message to
        log now, or None."""
        if self._failing_since is None:
            self._failing_since = now
            self._next_report = now + self.grace_ms
        if unanswered and not self._reported:
            self._next_report = now
        assert self._next_report is not None
        if now < self._next_report:
            return None
        self._next_report = now + self.interval_ms
        self._reported = True
        seconds = (now - self._failing_since) / 1000
        return (f"group {self.group_id} has no coordinator after {seconds:.0f} s: {reason}; "
                "retrying")

    def found(self) -> str | None:
        """A coordinator was found; returns a message if failures were reported."""
        reported = self._reported
        self._failing_since = self._next_report = None
        self._reported = False
        if reported:
            return f"group {self.group_id} found its coordinator"
        return None


def coordinator_error_reason(code_name: str, message: str) -> str:
    """The reason for a FindCoordinator error answer, with the usual cause of a lasting
    COORDINATOR_NOT_AVAILABLE."""
    reason = f"{code_name}: {message}"
    if code_name == "COORDINATOR_NOT_AVAILABLE":
        reason += (" (the broker cannot host the group's __consumer_offsets partition; is "
                   "offsets.topic.replication.factor larger than the number of brokers?)")
    return reason
