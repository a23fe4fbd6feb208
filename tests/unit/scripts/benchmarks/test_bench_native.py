"""The arithmetic of the native cluster benchmarks (scripts/bench --replication, --latency):
latency quantiles and histogram, the goal ratios, the load generator's input, and the
script's option checks."""

from __future__ import annotations

import subprocess
from pathlib import Path

from scripts.benchmarks.latency import histogram, percentile, render
from scripts.benchmarks.native_load import write_records
from scripts.benchmarks.node_cpu import cpu_seconds, per_gb
from scripts.benchmarks.replication import goal_ratios
from tests.conftest import REPO_ROOT

MS = 1_000_000


def test_quantiles_and_histogram_weigh_each_latency_by_its_count() -> None:
    weighted = [(1 * MS, 900), (4 * MS, 95), (300 * MS, 5)]
    assert percentile(weighted, 1000, 0.5) == 1.0
    assert percentile(weighted, 1000, 0.99) == 4.0
    assert percentile(weighted, 1000, 0.999) == 300.0
    assert percentile([], 0, 0.5) is None
    hist = histogram(weighted)
    assert hist["<=1ms"] == 900 and hist["<=5ms"] == 95 and hist["<=500ms"] == 5
    assert sum(hist.values()) == 1000
    lines = render(hist).splitlines()
    assert len(lines) == len(hist) and "90.0%" in lines[1] and "#" * 45 in lines[1]


def case(records_per_s: int, cluster: float, **roles: float) -> dict:
    return {"records_per_s": records_per_s, "cluster_cpu_s_per_gb": cluster,
            "nodes": {str(i): {"role": role.rstrip("0123456789"), "cpu_s_per_gb": cpu}
                      for i, (role, cpu) in enumerate(roles.items())}}


def test_goal_ratios_compare_replicated_runs_with_the_single_replica_ones() -> None:
    single = {"rf1_acks1": case(1000, 2.0, leader=2.0, idle1=0.0, idle2=0.0),
              "rf3_acks1": case(900, 9.0, leader=3.0, follower1=3.0, follower2=3.0),
              "rf3_acks_all": case(600, 10.0, leader=4.0, follower1=3.0, follower2=5.0)}
    four = {"rf1_acks1": case(2000, 3.0, leader1=1.0, leader2=1.0, leader3=1.0),
            "rf3_acks1": case(1500, 9.0, leader1=3.0, leader2=3.0, leader3=3.0),
            "rf3_acks_all": case(1000, 12.0, leader1=4.0, leader2=4.0, leader3=4.0)}
    assert goal_ratios(single, four) == {
        "rf3_acks_all_vs_rf1_acks1_p1": 0.6, "rf3_acks_all_vs_rf1_acks1_p4": 0.5,
        "rf3_acks1_vs_rf1_acks1_p1": 0.9, "append_cpu_s_per_gb_p1": 2.0,
        "follower_cpu_vs_append_p1": 2.0, "leader_cpu_vs_append_p1": 2.0,
        "replica_cpu_vs_append_p4": 1.33}


def test_producer_input_is_lines_of_100_bytes(tmp_path: Path) -> None:
    data = write_records(tmp_path / "r", 10_003).read_bytes()
    lines = data.split(b"\n")
    assert lines.pop() == b"" and len(lines) == 10_003
    assert {len(line) for line in lines} == {100}


def test_cpu_per_gb_of_this_process() -> None:
    assert cpu_seconds(None) is None
    assert (cpu_seconds(__import__("os").getpid()) or 0) > 0
    assert per_gb(3.0, 1_500_000_000) == 2.0 and per_gb(None, 10) is None


def test_bench_rejects_two_modes_a_bad_fraction_and_counts_below_one_in_one_line() -> None:
    for script, args in (("bench", ["--latency", "--scale-out"]),
                         ("bench", ["--latency", "--fraction", "1.5"]),
                         ("bench", ["--replication", "--rounds", "0"]),
                         ("bench-groups", ["--commits", "-1"]),
                         ("bench-groups", ["--rounds", "0"]),
                         ("bench-spark", ["--records", "-5"])):
        done = subprocess.run([str(REPO_ROOT / "scripts" / script), *args],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and done.stdout == ""
        [line] = done.stderr.strip().splitlines()
        assert line.startswith(f"scripts/{script}: ") and f"(see scripts/{script} --help)" in line


def test_the_latency_consumer_reports_only_stamped_values() -> None:
    from scripts.benchmarks.latency import FILLER, stamped
    from scripts.benchmarks.latency_consumer import stamps_of

    value = stamped(1_234_567_890_123).rstrip(b"\n")
    assert len(value) == 100
    assert stamps_of([FILLER.rstrip(b"\n"), value, None, b"", FILLER[:-1]]) == \
        [b"%019d" % 1_234_567_890_123]
