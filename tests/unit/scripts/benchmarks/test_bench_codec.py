"""scripts/bench-codec prints one JSON line with every figure it promises."""

from __future__ import annotations

from tests.unit.scripts.benchmarks.quick_bench import quick_bench_figures


def test_quick_run_prints_one_json_line_of_positive_rates() -> None:
    figures = quick_bench_figures("bench-codec")
    for key in (
        "encode_mb_s",
        "decode_mb_s",
        "lz4_encode_mb_s",
        "lz4_decode_mb_s",
        "fastpath_crc_mb_s",
        "raw_crc32c_mb_s",
        "fastpath_to_raw_crc_ratio",
    ):
        assert figures[key] > 0, key
    assert figures["batch_bytes"] <= 1 << 20
