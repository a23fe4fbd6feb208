"""scripts/bench-log prints one JSON line with every figure it promises."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path


def test_quick_run_prints_one_json_line_of_positive_figures(repo_root: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [str(repo_root / "scripts" / "bench-log"), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={"PATH": "/usr/bin:/bin", "BENCH_DIR": str(tmp_path)},
    )
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1
    figures = json.loads(lines[0])
    for prefix in ("", "cold_"):
        for key in ("append_mb_per_s", "raw_write_mb_per_s", "raw_reserved_write_mb_per_s",
                    "append_vs_raw", "append_vs_raw_reserved"):
            assert figures[prefix + key] > 0, prefix + key
    for key in ("read_mb_per_s", "index_lookup_us", "read_offset_lookup_p50_us"):
        assert figures[key] > 0, key
    assert figures["index_entries"] > 0
    assert list(tmp_path.iterdir()) == []  # the scratch directory is removed
