"""Bootstrap, restart and stop a local cluster: the one code path of the scripts and tests."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from pathlib import Path
from typing import Mapping, Sequence

from clients.common.properties import format_properties, load_properties
from broker.config.uuids import random_uuid_str
from cluster.launcher.layout import HOST, ClusterInfo, NodeInfo, plan_cluster
from cluster.launcher.processes import (
    LauncherError,
    check_ports_free,
    exit_code,
    is_running,
    log_tail,
    read_pid,
    start_process,
    stop_process,
    stop_processes,
)
from cluster.launcher.readiness import ReadinessCheck, kraft_ready

logger = logging.getLogger(__name__)

BOOTSTRAP_SERVERS_FILE = "bootstrap.servers"
CLUSTER_ID_FILE = "cluster.id"
# A failing bootstrap must exit within 60 s. Its whole run (formatting included) gets this
# budget; past it come at most one readiness probe (readiness.PROBE_TIMEOUT) and the parallel
# stop of the started nodes (STOP_TIMEOUT, then SIGKILL): 45 + 2 + 5 s, leaving room for the
# script's own start-up on a busy machine.
DEFAULT_TIMEOUT = 45.0
# SIGTERM grace of the nodes stopped because a start failed; then SIGKILL.
STOP_TIMEOUT = 5.0


def bootstrap_quorum(dir: str | Path, nodes: int = 3, controllers: int = 0,
                     base_port: int = 9092, overrides: Mapping[str, str] | None = None, *,
                     ready: ReadinessCheck = kraft_ready,
                     timeout: float = DEFAULT_TIMEOUT,
                     hosts: Sequence[str] | None = None,
                     format_args: Sequence[str] = (),
                     node_overrides: Mapping[int, Mapping[str, str]] | None = None
                     ) -> ClusterInfo:
    """Write configs, format storage (`raftka storage format` with `format_args` added, e.g.
    `--add-scram ...`), start every node, wait until `ready` holds for all.

    `hosts` puts each node on its own loopback address (see `plan_cluster`).
    `node_overrides` adds keys to single nodes' configs by node id (e.g. `broker.rack`).

    `timeout` bounds the whole bootstrap, formatting included. On failure the started nodes
    are stopped and LauncherError carries the failing node's log tail."""
    deadline = time.monotonic() + timeout
    cluster_dir = Path(dir).resolve()
    cluster_dir.mkdir(parents=True, exist_ok=True)
    for existing in _existing_nodes(cluster_dir):
        pid = read_pid(existing)
        if pid is not None and is_running(pid, existing):
            raise LauncherError(f"node {existing.node_id} under {cluster_dir} is running "
                                f"(pid {pid}); stop it first")
    try:
        cluster = plan_cluster(cluster_dir, random_uuid_str(), nodes, controllers, base_port,
                               overrides, hosts)
    except ValueError as exc:
        raise LauncherError(str(exc)) from None
    check_ports_free(cluster.nodes)
    (cluster_dir / CLUSTER_ID_FILE).write_text(cluster.cluster_id + "\n")
    for node in cluster.nodes:
        node.properties.update((node_overrides or {}).get(node.node_id, {}))
        node.dir.mkdir(parents=True, exist_ok=True)
        node.config_path.write_text(format_properties(node.properties))
        _format_storage(node, cluster.cluster_id, deadline, timeout, format_args)
    started: list[NodeInfo] = []
    try:
        for node in cluster.nodes:
            start_process(node)
            started.append(node)
        _wait_ready(cluster, cluster.nodes, ready, deadline, timeout)
    except BaseException:
        # In parallel: one by one, N nodes ignoring SIGTERM would cost N grace periods.
        stop_processes(started, timeout=STOP_TIMEOUT)
        raise
    (cluster_dir / BOOTSTRAP_SERVERS_FILE).write_text(cluster.bootstrap_servers + "\n")
    return cluster


def start_node(dir: str | Path, node_id: int, *, ready: ReadinessCheck = kraft_ready,
               timeout: float = DEFAULT_TIMEOUT) -> NodeInfo:
    """Restart one node from its existing config and wait until `ready` holds for it."""
    cluster = load_cluster(dir)
    node = _node(cluster, node_id)
    pid = read_pid(node)
    if pid is not None and is_running(pid, node):
        raise LauncherError(f"node {node_id} is already running (pid {pid})")
    check_ports_free([node])
    start_process(node)
    try:
        _wait_ready(cluster, [node], ready, time.monotonic() + timeout, timeout)
    except BaseException:
        stop_process(node, timeout=STOP_TIMEOUT)
        raise
    return node


def stop_quorum(dir: str | Path, node_id: int | None = None, kill: bool = False,
                timeout: float = 30.0) -> list[int]:
    """SIGTERM (SIGKILL with `kill`) every node or one, wait for each to exit, remove pid
    files. Returns the ids of nodes that were running."""
    cluster = load_cluster(dir)
    if node_id is not None:
        return stop_processes([_node(cluster, node_id)], kill=kill, timeout=timeout)
    # Brokers go first, as in Kafka: their controlled shutdown needs a live controller quorum.
    brokers_only = [node for node in cluster.nodes if "controller" not in node.roles]
    with_controller = [node for node in cluster.nodes if "controller" in node.roles]
    stopped = stop_processes(brokers_only, kill=kill, timeout=timeout)
    return sorted(stopped + stop_processes(with_controller, kill=kill, timeout=timeout))


def load_cluster(dir: str | Path) -> ClusterInfo:
    """Rebuild a cluster's description from DIR/node-*/server.properties."""
    cluster_dir = Path(dir).resolve()
    nodes = _existing_nodes(cluster_dir)
    if not nodes:
        raise LauncherError(f"no node configs under {cluster_dir}")
    try:
        cluster_id = (cluster_dir / CLUSTER_ID_FILE).read_text().strip()
    except FileNotFoundError:
        cluster_id = ""
    return ClusterInfo(cluster_dir, cluster_id, nodes)


def _existing_nodes(cluster_dir: Path) -> list[NodeInfo]:
    nodes = []
    for config_path in cluster_dir.glob("node-*/server.properties"):
        props = load_properties(config_path)
        ports = _listener_ports(props.get("listeners", ""))
        host = _listener_host(props.get("listeners", ""))
        offset = int(props.get("raftka.raft.port.offset", "1000"))
        controller_port = ports.get("CONTROLLER")
        nodes.append(NodeInfo(
            int(props["node.id"]), tuple(r.strip() for r in props["process.roles"].split(",")),
            config_path.parent, ports.get("PLAINTEXT"), controller_port,
            None if controller_port is None else controller_port + offset,
            metrics_port=_metrics_port(props.get("raftka.metrics.listener")),
            properties=props, host=host))
    return sorted(nodes, key=lambda node: node.node_id)


def _metrics_port(listener: str | None) -> int | None:
    """The port of a node's `raftka.metrics.listener` (None when unset or empty)."""
    if not listener or not listener.strip():
        return None
    port = listener.strip().rstrip("/").rpartition(":")[2]
    return int(port) if port.isdigit() else None


def _listener_ports(listeners: str) -> dict[str, int]:
    ports = {}
    for item in listeners.split(","):
        name, sep, address = item.strip().partition("://")
        if sep:
            ports[name.upper()] = int(address.rpartition(":")[2])
    return ports


def _listener_host(listeners: str) -> str:
    """The host of the first listener (every listener of a launched node shares it)."""
    first = listeners.split(",")[0].strip().partition("://")[2]
    return first.rpartition(":")[0] or HOST


def _node(cluster: ClusterInfo, node_id: int) -> NodeInfo:
    try:
        return cluster.node(node_id)
    except KeyError as exc:
        raise LauncherError(str(exc.args[0])) from None


def _format_storage(node: NodeInfo, cluster_id: str, deadline: float, budget: float,
                    extra_args: Sequence[str] = ()) -> None:
    late = LauncherError(f"formatting node {node.node_id} did not finish within the "
                         f"{budget:.0f} s bootstrap timeout")
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise late
    try:
        result = subprocess.run(
            [sys.executable, "-m", "broker.cli.main", "storage", "format", "-t", cluster_id,
             "-c", str(node.config_path), *extra_args],
            capture_output=True, text=True, timeout=remaining)
    except subprocess.TimeoutExpired:
        raise late from None
    if result.returncode != 0:
        raise LauncherError(f"formatting node {node.node_id} failed:\n"
                            f"{result.stderr.strip() or result.stdout.strip()}")


def _wait_ready(cluster: ClusterInfo, nodes: list[NodeInfo], ready: ReadinessCheck,
                deadline: float, budget: float) -> None:
    """Poll until `ready` holds for every node; fail at once if one exits, or at `deadline`
    (a time.monotonic() value; `budget` is the timeout it came from, for the message)."""
    waiting = list(nodes)
    while waiting:
        for node in list(waiting):
            pid = read_pid(node)
            if pid is None or not is_running(pid):
                code = None if pid is None else exit_code(pid)
                raise LauncherError(f"node {node.node_id} exited during start-up"
                                    f"{'' if code is None else f' (exit code {code})'}; "
                                    f"last lines of {node.log_path}:\n{log_tail(node)}")
            # Checked before every probe, not once per pass: a pass over many nodes whose
            # probes time out would otherwise run far past the deadline.
            if time.monotonic() >= deadline:
                raise _not_ready(node, budget)
            if ready(cluster, node):
                logger.info("node %d is ready", node.node_id)
                waiting.remove(node)
        if not waiting:
            return
        time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))


def _not_ready(node: NodeInfo, budget: float) -> LauncherError:
    return LauncherError(f"node {node.node_id} was not ready within {budget:.0f} s; "
                         f"last lines of {node.log_path}:\n{log_tail(node)}")
