"""The figures and the report of a chaos run: per fault, how long produce took to resume and
to recover after the heal, and the controller election it caused; the longest gap in
acknowledgements per fault kind; and a PNG timeline of throughput and p99 latency with the
fault windows shaded. Pure functions, except `write_timeline`."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from cluster.chaos.checker import Acknowledged, CheckReport

TopicPartition = tuple[str, int]
KIND_COLOURS = {"kill": "tab:red", "pause": "tab:orange", "partition": "tab:purple",
                "disk": "tab:brown"}


@dataclass(frozen=True)
class FaultWindow:
    """A fault as it happened: injected at `start_s`, healed at `healed_s` (run seconds);
    `controller` is the active controller when it was injected."""

    kind: str
    node: int
    start_s: float
    healed_s: float
    controller: int | None = None


@dataclass(frozen=True)
class FaultFigures:
    kind: str
    node: int
    start_s: float
    healed_s: float
    resumed_s: float | None       # fault start -> every partition acknowledged again
    recovered_s: float | None     # heal -> every partition acknowledged again
    election_s: float | None      # fault start -> a new controller (when it hit the controller)


def ack_times(acknowledged: Sequence[Acknowledged], deliveries: Sequence[tuple[float, float]]
              ) -> dict[TopicPartition, list[tuple[float, float]]]:
    """Per partition, (acknowledged, sent) times of its records, in acknowledgement order;
    `deliveries` is (sent, acknowledged) per record, parallel to `acknowledged`."""
    times: dict[TopicPartition, list[tuple[float, float]]] = defaultdict(list)
    for ack, (sent, acked) in zip(acknowledged, deliveries):
        times[ack.partition].append((acked, sent))
    return {tp: sorted(ts) for tp, ts in times.items()}


def _all_acknowledge_after(times: Mapping[TopicPartition, list[tuple[float, float]]],
                           t: float) -> float | None:
    """Seconds from `t` until every partition has acknowledged a record sent after `t`
    (records already in flight at `t` say nothing about whether produce works)."""
    waits = []
    for ts in times.values():
        first = next((acked for acked, sent in ts if sent >= t), None)
        if first is None:
            return None
        waits.append(first - t)
    return max(waits) if waits else None


def fault_figures(windows: Sequence[FaultWindow],
                  times: Mapping[TopicPartition, list[tuple[float, float]]],
                  controllers: Sequence[tuple[float, int, int]]) -> list[FaultFigures]:
    """The figures of each fault; `controllers` is (time, controller, epoch) as the nodes
    named it. A fault on the active controller ends in an election: the first sight of
    another controller in a higher epoch than any seen before the fault."""
    figures = []
    for w in windows:
        election = None
        if w.controller == w.node:
            epoch = max((e for at, _, e in controllers if at <= w.start_s), default=-1)
            moved = [at for at, c, e in controllers
                     if at > w.start_s and c != w.node and e > epoch]
            election = min(moved) - w.start_s if moved else None
        figures.append(FaultFigures(w.kind, w.node, w.start_s, w.healed_s,
                                    _all_acknowledge_after(times, w.start_s),
                                    _all_acknowledge_after(times, w.healed_s), election))
    return figures


def longest_unavailability(figures: Sequence[FaultFigures],
                           times: Mapping[TopicPartition, list[tuple[float, float]]]
                           ) -> dict[str, float]:
    """Per fault kind, the longest gap between two acknowledgements of one partition that
    overlaps a fault of that kind (from its start to its recovery)."""
    longest: dict[str, float] = {}
    for f in figures:
        end = f.healed_s + (f.recovered_s or 0.0)
        for ts in times.values():
            acked = [a for a, _ in ts]
            for earlier, later in zip(acked, acked[1:]):
                if later >= f.start_s and earlier <= end:
                    longest[f.kind] = max(longest.get(f.kind, 0.0), later - earlier)
    return longest


def summary(check: CheckReport, figures: Sequence[FaultFigures],
            times: Mapping[TopicPartition, list[tuple[float, float]]], extra: Mapping[str, Any]
            ) -> dict[str, Any]:
    """The report as one JSON-able mapping."""
    return {
        **extra,
        "faults": [asdict(f) for f in figures],
        "faults_by_kind": dict(Counter(f.kind for f in figures)),
        "acknowledged": check.acknowledged, "lost": check.lost,
        "duplicated": check.duplicated, "reordered": check.reordered,
        "longest_unavailability_s": longest_unavailability(figures, times),
        "violations": [asdict(v) for v in check.violations],
    }


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def report_lines(report: Mapping[str, Any], max_violations: int = 20) -> list[str]:
    """The report as a person reads it."""
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(report["faults_by_kind"].items()))
    lines = [
        f"faults injected: {len(report['faults'])}" + (f" ({kinds})" if kinds else ""),
        f"records acknowledged: {report['acknowledged']}, lost: {report['lost']}, "
        f"duplicated: {report['duplicated']}, reordered: {report['reordered']}",
        f"records read: {report.get('reads', 0)}, aborted transactions' records: "
        f"{report.get('aborted', 0)}, sends that failed: {report.get('failed_sends', 0)}",
        f"{'fault':<10} {'node':>4} {'start':>7} {'healed':>7} {'resumed':>8} "
        f"{'recovered':>9} {'election':>8}",
    ]
    for f in report["faults"]:
        lines.append(f"{f['kind']:<10} {f['node']:>4} {_seconds(f['start_s']):>7} "
                     f"{_seconds(f['healed_s']):>7} {_seconds(f['resumed_s']):>8} "
                     f"{_seconds(f['recovered_s']):>9} {_seconds(f['election_s']):>8}")
    gaps = report["longest_unavailability_s"]
    if gaps:
        lines.append("longest unavailability: " + ", ".join(
            f"{k} {v:.1f}s" for k, v in sorted(gaps.items())))
    violations = report["violations"]
    if not violations:
        lines.append("no violation: every acknowledged record is present once, in order")
    else:
        lines.append(f"VIOLATIONS: {len(violations)}")
        for v in violations[:max_violations]:
            where = "" if v["partition"] is None else f" {v['partition'][0]}-{v['partition'][1]}"
            lines.append(f"  {v['kind']}{where}: {v['detail']}")
        if len(violations) > max_violations:
            lines.append(f"  ... and {len(violations) - max_violations} more (see the JSON)")
    return lines


def per_second(deliveries: Sequence[tuple[float, float]], duration_s: float
               ) -> tuple[list[int], list[float | None]]:
    """Acknowledgements per second and each second's p99 latency in ms (None when empty),
    from (sent, acknowledged) times."""
    bins = max(1, math.ceil(duration_s))
    latencies: list[list[float]] = [[] for _ in range(bins)]
    for sent, acked in deliveries:
        i = min(bins - 1, max(0, int(acked)))
        latencies[i].append((acked - sent) * 1000)
    counts = [len(ls) for ls in latencies]
    p99 = [sorted(ls)[min(len(ls) - 1, math.ceil(0.99 * len(ls)) - 1)] if ls else None
           for ls in latencies]
    return counts, p99


def write_timeline(path: Path, deliveries: Sequence[tuple[float, float]],
                   windows: Sequence[FaultWindow], duration_s: float) -> None:
    """A PNG: throughput and p99 latency per second, fault windows shaded by kind."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    counts, p99 = per_second(deliveries, duration_s)
    seconds = list(range(len(counts)))
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(11, 6))
    top.plot(seconds, counts, color="tab:blue", linewidth=1)
    top.set_ylabel("acknowledged records/s")
    bottom.plot(seconds, [math.nan if v is None else v for v in p99], color="tab:green",
                linewidth=1)
    bottom.set_ylabel("p99 latency (ms)")
    bottom.set_yscale("log")
    bottom.set_xlabel("seconds into the run")
    seen: set[str] = set()
    for w in windows:
        for axes in (top, bottom):
            axes.axvspan(w.start_s, w.healed_s, color=KIND_COLOURS.get(w.kind, "grey"),
                         alpha=0.2, label=None if w.kind in seen or axes is bottom
                         else w.kind)
        seen.add(w.kind)
    if seen:
        top.legend(loc="upper right", title="faults")
    top.set_title("raftka chaos: throughput and latency, faults shaded")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
