"""scripts/bench-log prints one JSON line with every figure it promises."""

from __future__ import annotations

from pathlib import Path

from tests.unit.scripts.benchmarks.quick_bench import quick_bench_figures


def test_quick_run_prints_one_json_line_of_positive_figures(tmp_path: Path) -> None:
    figures = quick_bench_figures("bench-log", {"BENCH_DIR": str(tmp_path)})
    for prefix in ("", "cold_"):
        for key in ("append_mb_per_s", "raw_write_mb_per_s", "raw_reserved_write_mb_per_s",
                    "append_vs_raw", "append_vs_raw_reserved"):
            assert figures[prefix + key] > 0, prefix + key
    for key in ("read_mb_per_s", "index_lookup_us", "read_offset_lookup_p50_us"):
        assert figures[key] > 0, key
    assert figures["index_entries"] > 0
    assert list(tmp_path.iterdir()) == []  # the scratch directory is removed
