"""The chaos run's pure parts: the seeded fault schedule, the per-fault figures, the
report's lines, and `raftka chaos`'s argument parsing."""

from __future__ import annotations

import pytest

from cluster.chaos.checker import Acknowledged, History, check
from cluster.chaos.nemesis import Fault, parse_kinds, resolve, schedule
from cluster.chaos.report import (
    FaultWindow,
    ack_times,
    fault_figures,
    longest_unavailability,
    per_second,
    report_lines,
    summary,
)
from cluster.chaos.command import parse_duration, parse_hosts

P0, P1 = ("t", 0), ("t", 1)


def test_the_schedule_is_seeded_sequential_and_fences() -> None:
    faults = schedule(["kill", "partition"], [1, 2, 3], 120, seed=7, session_timeout_s=3)
    assert faults == schedule(["kill", "partition"], [1, 2, 3], 120, seed=7,
                              session_timeout_s=3)
    assert faults != schedule(["kill", "partition"], [1, 2, 3], 120, seed=8,
                              session_timeout_s=3)
    assert len(faults) >= 5 and {f.kind for f in faults} == {"kill", "partition"}
    for earlier, later in zip(faults, faults[1:]):
        assert later.start_s >= earlier.start_s + earlier.duration_s + 4  # one at a time
    assert all(f.duration_s >= 4.5 for f in faults)     # past the session timeout
    assert faults[-1].start_s + faults[-1].duration_s <= 120


def test_faults_hit_the_leader_or_controller_of_the_moment() -> None:
    assert resolve(Fault("partition", 1, 0, 5, "controller"), 3, [1, 2]) == 3
    assert resolve(Fault("partition", 1, 0, 5, "controller"), None, [1, 2]) == 1
    assert resolve(Fault("kill", 2, 0, 5, "leader"), 3, [1, -1, 3]) == 1   # 2 % 2 live
    assert resolve(Fault("kill", 2, 0, 5, "leader"), 3, []) == 2
    assert resolve(Fault("pause", 2, 0, 5, "node"), 3, [1, 1]) == 2
    targets = {f.target for f in schedule(["partition"], [1, 2, 3], 600, 1, 3)}
    assert targets == {"leader", "controller"}


def test_unknown_fault_kinds_are_refused_by_name() -> None:
    assert parse_kinds("kill, disk") == ["kill", "disk"]
    with pytest.raises(ValueError, match="'flood'"):
        parse_kinds("kill,flood")


def acks(times: dict[tuple[str, int], list[float]]
         ) -> tuple[list[Acknowledged], list[tuple[float, float]]]:
    """Records acknowledged at the given times, each sent 0.1 s before."""
    out, deliveries = [], []
    for tp, ts in times.items():
        for i, t in enumerate(ts):
            out.append(Acknowledged(tp, i, f"{tp[1]}-{i}".encode(), "p", i))
            deliveries.append((t - 0.1, t))
    return out, deliveries


def test_fault_figures_measure_resumption_recovery_and_election() -> None:
    acked, at = acks({P0: [1, 2, 3, 9, 10, 11], P1: [1, 2, 3, 4, 5, 12]})
    times = ack_times(acked, at)
    window = FaultWindow("partition", 2, start_s=3.5, healed_s=8.0, controller=2)
    # (time, controller, epoch) as the nodes named it; a cut-off node naming itself in
    # its old epoch, or a node not yet knowing better, is not the election.
    views = [(3.0, 2, 5), (4.0, 2, 5), (5.0, 1, 5), (6.5, 1, 6), (6.6, 2, 5)]
    [figures] = fault_figures([window], times, views)
    assert figures.resumed_s == pytest.approx(5.5)     # P0 acked again at 9
    assert figures.recovered_s == pytest.approx(4.0)   # P1 acked again at 12
    # A record in flight when the fault starts says nothing: P1's ack at 4 was sent at 3.9.
    late, deliveries = acks({P0: [3.6, 9.0]})
    deliveries[0] = (3.0, 3.6)
    [in_flight] = fault_figures([window], ack_times(late, deliveries), [])
    assert in_flight.resumed_s == pytest.approx(5.5)
    assert figures.election_s == pytest.approx(3.0)    # controller 1 seen at 6.5
    # The longest gap overlapping the fault: P1 from 5 to 12.
    assert longest_unavailability([figures], times) == {"partition": pytest.approx(7.0)}
    other = FaultWindow("kill", 3, 3.5, 8.0, controller=2)
    assert fault_figures([other], times, [(6.5, 1, 6)])[0].election_s is None


def test_a_partition_that_never_recovers_has_no_figure() -> None:
    acked, at = acks({P0: [1, 2], P1: [1, 5]})
    [figures] = fault_figures([FaultWindow("kill", 1, 3, 4)], ack_times(acked, at), [])
    assert figures.resumed_s is None and figures.recovered_s is None


def test_report_lines_give_counts_and_each_violation() -> None:
    history = History(acknowledged=[Acknowledged(P0, 0, b"a", "p", 0)],
                      final_logs={P0: []})
    report = summary(check(history), [], {}, {"reads": 0})
    lines = report_lines(report)
    assert "records acknowledged: 1, lost: 1, duplicated: 0, reordered: 0" in lines
    assert lines[-2] == "VIOLATIONS: 1"
    assert lines[-1].startswith("  lost t-0: b'a' acknowledged at offset 0")
    clean = summary(check(History()), [], {}, {})
    assert report_lines(clean)[-1].startswith("no violation")


def test_per_second_throughput_and_p99() -> None:
    counts, p99 = per_second([(0.1, 0.2), (0.3, 0.5), (1.0, 1.9)] + [(2.0, 2.01)] * 99
                             + [(2.0, 2.5)], 3)
    assert counts == [2, 1, 100]
    assert p99[0] == pytest.approx(200) and p99[1] == pytest.approx(900)
    assert p99[2] == pytest.approx(10)


def test_chaos_arguments() -> None:
    assert parse_duration("90s") == 90 and parse_duration("5m") == 300
    assert parse_duration("1500ms") == 1.5 and parse_duration("2") == 2
    for bad in ("5 minutes", "0s", "-1m"):
        with pytest.raises(ValueError, match="--duration"):
            parse_duration(bad)
    assert parse_hosts(None, 3) == ["127.0.0.11", "127.0.0.12", "127.0.0.13"]
    with pytest.raises(ValueError, match="2 addresses for 3 nodes"):
        parse_hosts("127.0.0.2,127.0.0.3", 3)
    with pytest.raises(ValueError, match="own address"):
        parse_hosts("127.0.0.2,127.0.0.2,127.0.0.3", 3)
    assert Fault("kill", 1, 0, 1).kind == "kill"
