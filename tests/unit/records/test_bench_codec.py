"""scripts/bench-codec prints one JSON line with every figure it promises."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path


def test_quick_run_prints_one_json_line_of_positive_rates(repo_root: Path) -> None:
    result = subprocess.run(
        [str(repo_root / "scripts" / "bench-codec"), "--quick"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1
    figures = json.loads(lines[0])
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
