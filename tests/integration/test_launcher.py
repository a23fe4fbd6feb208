"""The cluster launcher with real node processes: the Python API with the ApiVersions
readiness check, and the scripts themselves as a user runs them."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from broker.config import load_properties
from cluster.launcher import (
    ClusterInfo,
    LauncherError,
    bootstrap_quorum,
    listening_ready,
    load_cluster,
    plan_cluster,
    start_node,
    stop_quorum,
)
from cluster.launcher.ports import bootstrap_on_free_ports, pick_base_port
from cluster.launcher.processes import is_running, read_pid
from broker.lifecycle import BROKER_EPOCH_FILE
from tests.conftest import REPO_ROOT


def bootstrap_listening(cluster_dir: Path, **kwargs: Any) -> ClusterInfo:
    """bootstrap_quorum with the ApiVersions readiness check on free ports of the test range
    (picking again if one is taken); callers use the returned cluster's directory."""
    return bootstrap_on_free_ports(cluster_dir, ready=listening_ready, timeout=30, **kwargs)


def test_plan_with_separate_controllers(tmp_path: Path) -> None:
    cluster = plan_cluster(tmp_path, "x", nodes=2, controllers=3, base_port=30000,
                           overrides={"num.partitions": "4"})
    roles = {n.node_id: n.roles for n in cluster.nodes}
    assert roles == {1: ("controller",), 2: ("controller",), 3: ("controller",),
                     4: ("broker",), 5: ("broker",)}
    assert [n.controller_port for n in cluster.nodes[:3]] == [30100, 30101, 30102]
    assert [n.raft_port for n in cluster.nodes[:3]] == [31100, 31101, 31102]
    assert [n.client_port for n in cluster.brokers] == [30000, 30001]
    assert cluster.bootstrap_servers == "127.0.0.1:30000,127.0.0.1:30001"
    voters = "1@127.0.0.1:30100,2@127.0.0.1:30101,3@127.0.0.1:30102"
    for node in cluster.nodes:
        assert node.properties["controller.quorum.voters"] == voters
        assert node.properties["num.partitions"] == "4"
    assert cluster.nodes[3].properties["listeners"] == "PLAINTEXT://127.0.0.1:30000"
    assert cluster.nodes[0].properties["listeners"] == "CONTROLLER://127.0.0.1:30100"
    assert cluster.nodes[3].properties["offsets.topic.replication.factor"] == "2"


def test_bootstrap_formats_starts_and_stops_combined_nodes(tmp_path: Path) -> None:
    cluster = bootstrap_listening(tmp_path, nodes=3, overrides={"num.partitions": "2"})
    try:
        base = cluster.nodes[0].client_port
        assert [n.client_port for n in cluster.nodes] == [base, base + 1, base + 2]
        assert [n.controller_port for n in cluster.nodes] == [base + 100, base + 101, base + 102]
        assert (cluster.dir / "bootstrap.servers").read_text().strip() == (
            f"127.0.0.1:{base},127.0.0.1:{base + 1},127.0.0.1:{base + 2}")
        directory_ids = set()
        for node in cluster.nodes:
            props = load_properties(cluster.dir / f"node-{node.node_id}" / "server.properties")
            assert props["process.roles"] == "broker,controller"
            assert props["num.partitions"] == "2"
            meta = load_properties(Path(props["log.dirs"]) / "meta.properties")
            assert meta["cluster.id"] == cluster.cluster_id
            assert meta["node.id"] == str(node.node_id)
            directory_ids.add(meta["directory.id"])
            pid = read_pid(node)
            assert pid is not None and is_running(pid, node)
            assert listening_ready(cluster, node)
        assert len(directory_ids) == 3
    finally:
        stopped = stop_quorum(cluster.dir)
    assert stopped == [1, 2, 3]
    for node in cluster.nodes:
        assert not node.pid_path.exists()
        assert "node %d stopped" % node.node_id in node.log_path.read_text()


@pytest.mark.slow
def test_restart_and_kill_one_node(tmp_path: Path) -> None:
    cluster = bootstrap_listening(tmp_path, nodes=1, controllers=1)
    try:
        assert stop_quorum(cluster.dir, node_id=2, kill=True) == [2]
        broker = load_cluster(cluster.dir).node(2)
        assert not broker.pid_path.exists()
        start_node(cluster.dir, 2, ready=listening_ready, timeout=30)
        pid = read_pid(broker)
        assert pid is not None and is_running(pid, broker)
        with pytest.raises(LauncherError, match="already running"):
            start_node(cluster.dir, 2, ready=listening_ready, timeout=30)
    finally:
        assert sorted(stop_quorum(cluster.dir)) == [1, 2]
    assert cluster.nodes[0].roles == ("controller",)


def test_node_that_exits_at_start_fails_with_its_log_tail(tmp_path: Path) -> None:
    cluster = bootstrap_listening(tmp_path, nodes=1)
    stop_quorum(cluster.dir)
    (Path(cluster.nodes[0].properties["log.dirs"]) / "meta.properties").unlink()
    started = time.monotonic()
    with pytest.raises(LauncherError) as failure:
        start_node(cluster.dir, 1, ready=listening_ready, timeout=30)
    assert time.monotonic() - started < 30
    assert "exited during start-up" in str(failure.value)
    assert "not formatted" in str(failure.value)  # the tail of the node's own log
    assert not cluster.nodes[0].pid_path.exists()


def test_bootstrap_fails_fast_when_a_port_is_taken(tmp_path: Path) -> None:
    messages = []
    for attempt in range(5):
        directory = tmp_path / f"attempt-{attempt}"
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            with pytest.raises(LauncherError, match="already in use") as refused:
                # The second node's client port is the taken one.
                bootstrap_quorum(directory, nodes=2, base_port=port - 1, ready=listening_ready)
        assert not list(directory.glob("node-*/pid"))
        messages.append(str(refused.value))
        # Another process on the machine may hold one of the plan's other ports by chance;
        # then that one is named, and the check is made again elsewhere.
        if re.search(rf"port {port} .*already in use", messages[-1]):
            return
    pytest.fail(f"the taken port was never the one named: {messages}")


def test_script_exits_nonzero_with_log_tail_when_never_ready(tmp_path: Path) -> None:
    """A voter list naming a second voter that never starts leaves no majority: no leader."""
    base_port = pick_base_port(nodes=2)  # this node's ports and the absent voter's
    controller_port = base_port + 100
    absent_voter = f"2@127.0.0.1:{base_port + 101}"
    started = time.monotonic()
    result = subprocess.run(
        [str(REPO_ROOT / "scripts" / "bootstrap-quorum"), "--dir", str(tmp_path), "--nodes",
         "1", "--base-port", str(base_port), "--timeout", "3",
         "--set", f"controller.quorum.voters=1@127.0.0.1:{controller_port},{absent_voter}"],
        capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert time.monotonic() - started < 60
    assert "was not ready" in result.stderr
    assert "starting node 1" in result.stderr  # the tail of the node's own log
    node = load_cluster(tmp_path).node(1)
    assert not node.pid_path.exists()
    assert os.listdir(tmp_path / "node-1" / "data")


@pytest.mark.slow
def test_script_with_default_timeout_fails_within_60_s(tmp_path: Path) -> None:
    """The promise holds with default settings: three combined nodes (formatted and stopped
    too) in a voter list of seven, so the four absent voters deny them a majority."""
    for _ in range(5):
        base_port = pick_base_port(nodes=7)  # the controller ports of all seven voters
        voters = ",".join(f"{i}@127.0.0.1:{base_port + 99 + i}" for i in range(1, 8))
        started = time.monotonic()
        result = subprocess.run(
            [str(REPO_ROOT / "scripts" / "bootstrap-quorum"), "--dir", str(tmp_path),
             "--base-port", str(base_port), "--set", f"controller.quorum.voters={voters}"],
            capture_output=True, text=True, timeout=90)
        elapsed = time.monotonic() - started
        if "already in use" not in result.stderr:
            break
    assert result.returncode != 0
    assert elapsed < 60, f"bootstrap-quorum took {elapsed:.1f} s to fail"
    assert "was not ready within 45 s" in result.stderr
    assert "starting node" in result.stderr  # the tail of the node's own log
    assert not list(tmp_path.glob("node-*/pid"))
    nodes = load_cluster(tmp_path).nodes
    assert len(nodes) == 3 and all(node.log_path.exists() for node in nodes)
    assert not processes_running(node.config_path for node in nodes)


def processes_running(config_paths: Iterable[Path]) -> list[int]:
    """Pids of live processes whose command line names one of these configs."""
    wanted = [str(path).encode() for path in config_paths]
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
            zombie = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
        except (OSError, IndexError):
            continue
        if not zombie and any(path in cmdline for path in wanted):
            found.append(int(entry.name))
    return found


def run_script(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO_ROOT / "scripts" / name), *args], capture_output=True,
                          text=True, timeout=90)


def run_quorum_describe(port: int, mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO_ROOT / ".venv" / "bin" / "raftka"), "quorum", "describe",
                           "--bootstrap-server", f"127.0.0.1:{port}", mode],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.slow
def test_scripts_bootstrap_describe_restart_after_sigterm_kill_and_stop(tmp_path: Path) -> None:
    """A broker restarted right after a clean stop names its previous epoch, so it registers at
    once instead of waiting out its old session (60 s here)."""
    for _ in range(5):
        base_port = pick_base_port(nodes=3)
        result = run_script("bootstrap-quorum", "--dir", str(tmp_path), "--nodes", "3",
                            "--base-port", str(base_port),
                            "--set", "broker.session.timeout.ms=60000",
                            "--set", "num.partitions=2")
        if result.returncode == 0 or "already in use" not in result.stderr:
            break
    assert result.returncode == 0, result.stderr
    try:
        servers = ",".join(f"127.0.0.1:{base_port + i}" for i in range(3))
        assert result.stdout.strip() == servers
        assert (tmp_path / "bootstrap.servers").read_text().strip() == servers

        status = run_quorum_describe(base_port + 1, "--status")
        assert status.returncode == 0, status.stderr
        keys = [line.split(":", 1)[0] for line in status.stdout.splitlines()]
        for key in ("ClusterId", "LeaderId", "LeaderEpoch", "HighWatermark", "CurrentVoters",
                    "CurrentObservers"):
            assert key in keys, status.stdout
        assert "CurrentVoters:          [1,2,3]" in status.stdout
        replication = run_quorum_describe(base_port + 2, "--replication")
        assert replication.returncode == 0, replication.stderr
        rows = replication.stdout.splitlines()
        assert rows[0].split()[:3] == ["NodeId", "LogEndOffset", "Lag"]
        assert sorted(int(row.split()[0]) for row in rows[1:]) == [1, 2, 3]

        node = load_cluster(tmp_path).node(3)
        stopped = run_script("stop-quorum", "--dir", str(tmp_path), "--node", "3")
        assert stopped.returncode == 0 and stopped.stdout.strip() == "stopped: node 3"
        assert not node.pid_path.exists()
        assert "node 3 stopped" in node.log_path.read_text()
        assert (Path(node.properties["log.dirs"]) / BROKER_EPOCH_FILE).exists()
        started = time.monotonic()
        restarted = run_script("start-node", "--dir", str(tmp_path), "--node", "3",
                               "--timeout", "30")
        elapsed = time.monotonic() - started
        assert restarted.returncode == 0, restarted.stderr
        assert elapsed < 20, f"restart took {elapsed:.1f} s"
        log = node.log_path.read_text()
        assert "shut down cleanly with epoch" in log
        assert "DUPLICATE_BROKER_REGISTRATION" not in log
        assert not (Path(node.properties["log.dirs"]) / BROKER_EPOCH_FILE).exists()

        killed = run_script("stop-quorum", "--dir", str(tmp_path), "--node", "2", "--kill")
        assert killed.returncode == 0 and killed.stdout.strip() == "stopped: node 2"
    finally:
        final = run_script("stop-quorum", "--dir", str(tmp_path))
    assert final.returncode == 0, final.stderr
    assert final.stdout.strip() == "stopped: node 1, node 3"
    assert not list(tmp_path.glob("node-*/pid"))
