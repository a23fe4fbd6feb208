"""scripts/bench-codec --messages prints one JSON line with every figure it promises."""

from __future__ import annotations

import json
import subprocess

from tests.conftest import REPO_ROOT

CASES = ("produce_decode", "fetch_encode", "metadata_request_decode",
         "metadata_response_encode", "metadata_response_decode")


def test_quick_run_prints_every_figure_as_dict_and_as_class() -> None:
    result = subprocess.run([str(REPO_ROOT / "scripts" / "bench-codec"), "--messages", "--quick"],
                            capture_output=True, text=True, timeout=120, check=True)
    [line] = result.stdout.strip().splitlines()
    figures = json.loads(line)
    assert figures["typed_available"] is True
    for case in CASES:
        for name in (f"{case}_us", f"{case}_typed_us"):
            assert isinstance(figures[name], float) and figures[name] > 0, name
