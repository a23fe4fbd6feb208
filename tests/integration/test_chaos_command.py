"""`raftka chaos`, short and seeded, with every fault kind: it injects them, heals, and
finds nothing acknowledged lost, duplicated or reordered; it writes its JSON report and a
PNG timeline. (Each fault kind's behaviour is staged deterministically in its own test.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cluster.testing.disks import DiskToolError, Tmpfs
from cluster.testing.network_partition import PartitionToolError, ensure_iptables
from tests.integration.fault_support import node_hosts, unavailable

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def require_fault_tools(tmp_path: Path) -> None:
    try:
        ensure_iptables()
        Tmpfs(tmp_path / "probe", 1 << 20).unmount()
    except (PartitionToolError, DiskToolError) as exc:
        unavailable(str(exc))


def test_a_short_mixed_chaos_run_loses_nothing(tmp_path: Path) -> None:
    require_fault_tools(tmp_path)
    out = tmp_path / "chaos"
    result = subprocess.run(
        [sys.executable, "-m", "broker.cli.main", "chaos", "--dir", str(out),
         "--duration", "60s", "--nemesis", "kill,pause,partition,disk", "--seed", "5",
         "--hosts", ",".join(node_hosts(3))],
        capture_output=True, text=True, timeout=420, cwd=REPO_ROOT, env=os.environ.copy())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no violation" in result.stdout, result.stdout
    report = json.loads((out / "report.json").read_text())
    assert report["violations"] == []
    assert report["lost"] == report["duplicated"] == report["reordered"] == 0
    assert report["acknowledged"] > 1000 and report["reads"] > 1000, report
    kinds = {f["kind"] for f in report["faults"]}
    assert len(report["faults"]) >= 3 and len(kinds) >= 3, report["faults"]
    assert all(f["healed_s"] > f["start_s"] for f in report["faults"])
    assert (out / "timeline.png").read_bytes()[:8] == PNG_MAGIC
    # Every rule and mount it made is gone.
    rules = subprocess.run(["iptables", "-w", "-S", "INPUT"], capture_output=True, text=True)
    assert "raftka-partition" not in rules.stdout
    mounts = Path("/proc/mounts").read_text()
    assert str(out) not in mounts
