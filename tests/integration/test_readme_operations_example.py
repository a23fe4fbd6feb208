"""The "Growing a cluster" story of docs/operations.md runs as written: a fourth broker joins a running
3-node cluster, a topic is reassigned onto it with `raftka reassign-partitions`, and a
preferred leader election gives it leaders. Only the ports (moved into the test range) and
the path of the scripts differ."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cluster.launcher import LauncherError, stop_quorum
from cluster.launcher.ports import pick_base_port
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow

README_BASE_PORT = 9092
# The story's ports: clients 9092-9095, controllers 9192-9194, metrics 9292-9295.
README_PORT = re.compile(r"\b(9[0-2]\d\d)\b")
PARTITIONS = 4


def readme_story() -> str:
    text = (REPO_ROOT / "docs" / "operations.md").read_text()
    section = text[text.index("\n## Growing a cluster\n"):]
    section = section[:section.index("\n## ", 1)]
    match = re.search(r"```sh\n(.*?)```", section, re.S)
    assert match, "the Growing a cluster section has no sh example"
    return match.group(1)


def on_ports(script: str, base: int) -> str:
    def moved(match: re.Match[str]) -> str:
        port = int(match.group(1))
        if not README_BASE_PORT <= port <= README_BASE_PORT + 203:
            return match.group(1)
        return str(port - README_BASE_PORT + base)

    return README_PORT.sub(moved, script)


def describe_rows(output: str) -> dict[int, tuple[int, list[int]]]:
    """partition -> (leader, replicas) from `raftka topics --describe` lines."""
    rows = {}
    for line in output.splitlines():
        fields = dict(f.split(": ", 1) for f in line.strip().split("\t") if ": " in f)
        if "Partition" in fields and fields.get("Topic") == "orders":
            rows[int(fields["Partition"])] = (
                int(fields["Leader"]), [int(b) for b in fields["Replicas"].split(",")])
    return rows


def test_the_readme_story_adds_a_broker_and_moves_a_topic_onto_it(tmp_path: Path) -> None:
    story = readme_story()
    assert "--throttle" in story and "leader-election" in story
    # A 4-node layout's ports cover the story's: broker 4 uses client and metrics ports
    # of a fourth node.
    base = pick_base_port(nodes=4)
    script = on_ports(story, base).replace("./scripts/", f"{REPO_ROOT}/scripts/")
    env = {**os.environ,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    try:
        result = subprocess.run(["bash", "-c", "set -euo pipefail\n" + script], cwd=tmp_path,
                                env=env, capture_output=True, text=True, timeout=300,
                                stdin=subprocess.DEVNULL)
    finally:
        if (tmp_path / "grow-data").exists():
            try:
                stop_quorum(tmp_path / "grow-data", kill=True, timeout=10.0)
            except LauncherError:
                pass
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]

    out = result.stdout
    assert ("Successfully started partition reassignments for "
            + ",".join(f"orders-{p}" for p in range(PARTITIONS))) in out
    for p in range(PARTITIONS):
        assert f"Reassignment of partition orders-{p} is completed." in out
    assert "Throttle was removed." in out

    rows = describe_rows(out)
    assert sorted(rows) == list(range(PARTITIONS))
    # Balanced over four brokers, and every partition led by its preferred replica.
    replicas = [b for _, listed in rows.values() for b in listed]
    assert {b: replicas.count(b) for b in (1, 2, 3, 4)} == {1: 3, 2: 3, 3: 3, 4: 3}
    assert all(leader == listed[0] for leader, listed in rows.values())
    assert sorted(listed[0] for _, listed in rows.values()) == [1, 2, 3, 4]
    # The records read back (`wc -l`), then stop-quorum stopping broker 4 with the others.
    assert [line.strip() for line in out.splitlines()[-2:]] == [
        "1000", "stopped: node 1, node 2, node 3, node 4"]
