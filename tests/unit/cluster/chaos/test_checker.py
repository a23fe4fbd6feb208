"""The fault-run checker against planted faults: each one is reported, with its evidence,
and a clean history passes."""

from __future__ import annotations

from cluster.chaos.checker import (
    Acknowledged,
    CommittedOffset,
    ControllerObservation,
    History,
    Read,
    check,
)

P0, P1 = ("t", 0), ("t", 1)


def clean_history() -> History:
    """Two producers on P0, one on P1; everything acknowledged is where it should be."""
    acked = [Acknowledged(P0, 0, b"a-0", "a", 0), Acknowledged(P0, 1, b"b-0", "b", 0),
             Acknowledged(P0, 2, b"a-1", "a", 1), Acknowledged(P0, 3, b"b-1", "b", 1),
             Acknowledged(P1, 0, b"c-0", "c", 0), Acknowledged(P1, 1, b"c-1", "c", 1)]
    return History(
        acknowledged=acked,
        reads=[Read(P0, 0, b"a-0"), Read(P0, 2, b"a-1"), Read(P1, 1, b"c-1")],
        final_logs={P0: [(0, b"a-0"), (1, b"b-0"), (2, b"a-1"), (3, b"b-1")],
                    # An unacknowledged record (a timed-out write that made it) is fine.
                    P1: [(0, b"c-0"), (1, b"c-1"), (2, b"c-2")]},
        replica_bytes={P0: {1: b"xyz", 2: b"xyz", 3: b"xyz"}},
        committed_offsets=[CommittedOffset("g", P0, 1), CommittedOffset("g", P0, 3),
                           CommittedOffset("g", P1, 0), CommittedOffset("h", P0, 0)],
        controllers=[ControllerObservation(3, 1), ControllerObservation(3, 1),
                     ControllerObservation(5, 2)])


def kinds(history: History) -> list[str]:
    return [v.kind for v in check(history).violations]


def test_a_clean_history_passes() -> None:
    report = check(clean_history())
    assert report.ok, report.violations
    assert (report.acknowledged, report.lost, report.duplicated, report.reordered) == \
        (6, 0, 0, 0)


def test_a_removed_record_is_reported_lost() -> None:
    history = clean_history()
    history.final_logs[P0] = [(0, b"a-0"), (1, b"b-0"), (3, b"b-1")]
    report = check(history)
    assert report.lost == 1
    lost = [v for v in report.violations if v.kind == "lost"]
    assert lost[0].partition == P0 and "b'a-1'" in lost[0].detail and "offset 2" in lost[0].detail
    # The consumer had read it: that read is now of a record the log does not hold.
    assert "phantom-read" in kinds(history)


def test_a_duplicated_record_is_reported() -> None:
    history = clean_history()
    history.final_logs[P1] = [(0, b"c-0"), (1, b"c-1"), (2, b"c-0")]
    report = check(history)
    assert report.duplicated == 1
    assert [v.detail for v in report.violations if v.kind == "duplicated"] == \
        ["b'c-0' is at offsets [0, 2]"]


def test_a_reordered_record_is_reported() -> None:
    history = clean_history()
    # a-1 was acknowledged after a-0 but ends up before it (and away from its offsets).
    history.final_logs[P0] = [(0, b"a-1"), (1, b"b-0"), (2, b"a-0"), (3, b"b-1")]
    history.acknowledged = [Acknowledged(P0, 2, b"a-0", "a", 0),
                            Acknowledged(P0, 1, b"b-0", "b", 0),
                            Acknowledged(P0, 0, b"a-1", "a", 1),
                            Acknowledged(P0, 3, b"b-1", "b", 1)]
    history.reads = []
    report = check(history)
    assert report.reordered == 1
    assert kinds(history) == ["reordered"]


def test_a_record_at_another_offset_than_acknowledged_is_reported() -> None:
    history = clean_history()
    history.final_logs[P1] = [(0, b"c-0"), (1, b"other"), (2, b"c-1")]
    history.reads = []
    assert kinds(history) == ["moved"]


def test_a_read_of_a_record_the_final_log_lacks_is_reported() -> None:
    history = clean_history()
    history.reads.append(Read(P1, 5, b"c-9"))
    violations = check(history).violations
    assert [v.kind for v in violations] == ["phantom-read"]
    assert "offset 5" in violations[0].detail and "nothing" in violations[0].detail


def test_divergent_replicas_are_reported() -> None:
    history = clean_history()
    history.replica_bytes[P0][3] = b"xyZ"
    assert kinds(history) == ["divergent-replicas"]


def test_controller_epochs_going_back_or_shared_are_reported() -> None:
    history = clean_history()
    history.controllers += [ControllerObservation(4, 3), ControllerObservation(5, 3)]
    assert kinds(history) == ["controller-epoch-decreased", "two-controllers-one-epoch"]


def test_a_committed_offset_going_back_is_reported() -> None:
    history = clean_history()
    history.committed_offsets.append(CommittedOffset("g", P0, 2))
    violations = check(history).violations
    assert [(v.kind, v.partition, v.detail) for v in violations] == \
        [("committed-offset-went-back", P0, "group 'g': 3 -> 2")]


def test_a_read_of_an_aborted_transaction_is_reported() -> None:
    history = clean_history()
    history.final_logs[P1].append((3, b"t-0"))
    history.aborted = [b"t-0"]
    assert kinds(history) == []
    history.reads.append(Read(P1, 3, b"t-0"))
    report = check(history)
    assert [v.kind for v in report.violations] == ["aborted-read"]
    assert "offset 3" in report.violations[0].detail
