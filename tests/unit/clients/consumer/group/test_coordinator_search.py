"""Reports of a failing coordinator lookup: after a grace period, then at a bounded rate."""

from __future__ import annotations

from clients.consumer.group.coordinator_search import (
    CoordinatorSearchReport,
    coordinator_error_reason,
)


def test_reports_after_the_grace_period_then_at_most_once_per_interval() -> None:
    report = CoordinatorSearchReport("g", grace_ms=3000, interval_ms=30000)
    said = [(t, report.failed("no broker is reachable", t)) for t in range(0, 70000, 100)]
    lines = [(t, m) for t, m in said if m is not None]
    assert [t for t, _ in lines] == [3000, 33000, 63000]
    assert lines[0][1] == "group g has no coordinator after 3 s: no broker is reachable; retrying"
    assert report.found() == "group g found its coordinator"
    assert report.failed("again", 80000) is None  # a new search gets a new grace period


def test_a_brief_failure_is_not_reported() -> None:
    report = CoordinatorSearchReport("g", grace_ms=3000)
    assert report.failed("x", 0) is None
    assert report.found() is None


def test_coordinator_not_available_names_the_usual_cause() -> None:
    reason = coordinator_error_reason("COORDINATOR_NOT_AVAILABLE", "The coordinator is not "
                                      "available.")
    assert "offsets.topic.replication.factor" in reason
    assert coordinator_error_reason("NOT_COORDINATOR", "m") == "NOT_COORDINATOR: m"


def test_no_answer_at_all_is_reported_at_once_then_at_the_bounded_rate() -> None:
    report = CoordinatorSearchReport("g", grace_ms=3000, interval_ms=30000)
    said = [t for t in range(0, 40000, 100)
            if report.failed("no broker is reachable", t, unanswered=True) is not None]
    assert said == [0, 30000]
