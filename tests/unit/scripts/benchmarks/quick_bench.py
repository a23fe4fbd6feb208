"""Running a benchmark script's quick mode, for the tests that check a script still works."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from tests.conftest import REPO_ROOT


def quick_bench_figures(script: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The one JSON line ``scripts/<script> --quick`` prints, parsed."""
    result = subprocess.run(
        [str(REPO_ROOT / "scripts" / script), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, **(env or {})},
    )
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout
    figures: dict[str, Any] = json.loads(lines[0])
    return figures
