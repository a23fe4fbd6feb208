"""A running local cluster for tests, started by ``cluster.launcher`` on free ports, with
the controls a test needs: stop, freeze and restart nodes, create topics, wait for ISRs.

It lives under ``broker`` because it drives the launcher (``clients`` may not import
``broker``); it talks to the cluster through Raftka's own admin client.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any, Mapping, Sequence

from cluster.launcher import ClusterInfo, LauncherError, start_node, stop_quorum
from cluster.launcher.ports import bootstrap_on_free_ports
from cluster.launcher.processes import is_running, read_pid
from cluster.testing.waiting import wait_for
from clients.admin import BlockingAdmin, NewTopic

DEFAULT_TIMEOUT_S = 60.0


def _config_key(name: str) -> str:
    """``log_retention_ms`` -> ``log.retention.ms`` (keyword arguments cannot hold dots)."""
    return name.replace("_", ".")


def start_cluster(directory: Path, nodes: int = 3, hosts: Sequence[str] | None = None,
                  node_config: Mapping[int, Mapping[str, Any]] | None = None,
                  **server_config: Any) -> RaftkaCluster:
    """Bootstrap ``nodes`` combined nodes under ``directory`` on free ports, with
    ``server_config`` (Kafka's broker keys; underscores stand for dots) on every node and
    ``node_config`` (node id -> keys, e.g. ``broker.rack``) on single nodes; ``hosts`` puts
    each node on its own loopback address."""
    overrides = {_config_key(k): str(v) for k, v in server_config.items()}
    per_node = {node: {key: str(value) for key, value in keys.items()}
                for node, keys in (node_config or {}).items()}
    info = bootstrap_on_free_ports(directory, nodes, 0, overrides or None, hosts=hosts,
                                   node_overrides=per_node)
    return RaftkaCluster(info)


class RaftkaCluster:
    """A started cluster. ``close`` (the fixtures call it) kills every node."""

    def __init__(self, info: ClusterInfo,
                 client_config: Mapping[str, str] | None = None) -> None:
        self.info = info
        # What a client needs besides bootstrap.servers (security.protocol, ssl.*).
        self.client_config = dict(client_config or {})
        self._paused: set[int] = set()
        self._closed = False

    @property
    def bootstrap_servers(self) -> str:
        return self.info.bootstrap_servers

    @property
    def node_ids(self) -> list[int]:
        return [node.node_id for node in self.info.nodes]

    def host(self, node: int) -> str:
        """The address ``node``'s listeners and Raft port bind to."""
        return self.info.node(node).host

    def metrics_url(self, node: int) -> str:
        """Where ``node`` serves its Prometheus metrics (``/metrics``)."""
        port = self.info.node(node).metrics_port
        if port is None:
            raise ValueError(f"node {node} serves no metrics (raftka.metrics.listener is empty)")
        return f"http://{self.host(node)}:{port}/metrics"

    def pid(self, node: int) -> int | None:
        """The node's process id while it runs, else None."""
        info = self.info.node(node)
        pid = read_pid(info)
        return pid if pid is not None and is_running(pid, info) else None

    def kill(self, node: int) -> None:
        """SIGKILL ``node`` (a crash: no controlled shutdown)."""
        self._paused.discard(node)
        stop_quorum(self.info.dir, node, kill=True)

    def stop(self, node: int) -> None:
        """Stop ``node`` cleanly (SIGTERM, as ``scripts/stop-quorum`` does)."""
        self.resume(node)
        stop_quorum(self.info.dir, node)

    def pause(self, node: int) -> None:
        """Freeze ``node`` (SIGSTOP): it keeps its sockets but answers nothing."""
        self._signal(node, signal.SIGSTOP)
        self._paused.add(node)

    def resume(self, node: int) -> None:
        """Thaw a paused node (SIGCONT)."""
        if node in self._paused:
            self._signal(node, signal.SIGCONT)
            self._paused.discard(node)

    def restart(self, node: int, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        """Stop ``node`` if it runs, start it again from its config and wait until it is
        ready (``scripts/start-node``'s code path)."""
        if self.pid(node) is not None:
            self.stop(node)
        start_node(self.info.dir, node, timeout=timeout)

    def _signal(self, node: int, signum: int) -> None:
        pid = self.pid(node)
        if pid is None:
            raise LauncherError(f"node {node} is not running")
        os.kill(pid, signum)

    def admin(self) -> BlockingAdmin:
        return BlockingAdmin({**self.client_config,
                              "bootstrap.servers": self.bootstrap_servers})

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1,
                     config: Mapping[str, str] | None = None,
                     timeout: float = DEFAULT_TIMEOUT_S) -> None:
        """Create ``name`` and wait until every partition has a leader and a full ISR."""
        with self.admin() as admin:
            admin.create_topics([NewTopic(name, partitions, replication_factor,
                                          dict(config or {}))])
        self.wait_for_isr(name, replication_factor, timeout=timeout)

    def wait_for_isr(self, topic: str, size: int | None = None,
                     partitions: list[int] | None = None,
                     timeout: float = DEFAULT_TIMEOUT_S) -> None:
        """Wait until each partition of ``topic`` (or those listed) has a leader and at
        least ``size`` in-sync replicas (default: all its replicas)."""
        def settled() -> bool:
            try:
                with self.admin() as admin:
                    described = admin.describe_topics([topic])
            except Exception:  # not created everywhere yet, or a node is restarting
                return False
            if not described or not described[0].partitions:
                return False
            for p in described[0].partitions:
                if partitions is not None and p.partition not in partitions:
                    continue
                wanted = len(p.replicas) if size is None else size
                if p.leader < 0 or len(p.isr) < wanted:
                    return False
            return True
        wait_for(settled, f"topic {topic} to have its leaders and ISR", timeout)

    def close(self) -> None:
        """Kill every node (paused ones included) and wait until none runs."""
        if self._closed:
            return
        self._closed = True
        for node in list(self._paused):
            try:
                self.resume(node)
            except LauncherError:
                pass
        try:
            stop_quorum(self.info.dir, kill=True, timeout=10.0)
        except LauncherError:
            pass

    def running(self) -> list[int]:
        """The nodes whose process runs."""
        return [n for n in self.node_ids if self.pid(n) is not None]

    def __enter__(self) -> RaftkaCluster:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
