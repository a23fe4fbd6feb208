"""Pure planning of a local cluster: node ids, roles, ports and each node's properties."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
import ipaddress
from typing import Mapping, Sequence

HOST = "127.0.0.1"
CONTROLLER_PORT_STEP = 100  # controller ports start at base-port + 100
METRICS_PORT_STEP = 200  # metrics listeners (/metrics) start at base-port + 200
DEFAULT_RAFT_PORT_OFFSET = 1000  # mirrors raftka.raft.port.offset's default


@dataclass
class NodeInfo:
    """One node of a launched cluster and where its files live."""

    node_id: int
    roles: tuple[str, ...]
    dir: Path
    client_port: int | None
    controller_port: int | None
    raft_port: int | None
    metrics_port: int | None = None
    properties: dict[str, str] = field(default_factory=dict)
    # The address every listener and the Raft port of this node bind to.
    host: str = HOST

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles

    @property
    def config_path(self) -> Path:
        return self.dir / "server.properties"

    @property
    def log_path(self) -> Path:
        return self.dir / "server.log"

    @property
    def pid_path(self) -> Path:
        return self.dir / "pid"

    def ports(self) -> dict[str, int]:
        """Every TCP port the node will bind, by what it is for."""
        named = {"PLAINTEXT": self.client_port, "CONTROLLER": self.controller_port,
                 "Raft": self.raft_port, "metrics": self.metrics_port}
        return {name: port for name, port in named.items() if port is not None}


@dataclass
class ClusterInfo:
    """A planned or running local cluster."""

    dir: Path
    cluster_id: str
    nodes: list[NodeInfo]

    @property
    def brokers(self) -> list[NodeInfo]:
        return [node for node in self.nodes if node.is_broker]

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{node.host}:{node.client_port}" for node in self.brokers)

    def node(self, node_id: int) -> NodeInfo:
        for node in self.nodes:
            if node.node_id == node_id:
                return node
        raise KeyError(f"no node {node_id} under {self.dir}")


def node_dir(cluster_dir: Path, node_id: int) -> Path:
    return cluster_dir / f"node-{node_id}"


def plan_cluster(cluster_dir: Path, cluster_id: str, nodes: int = 3, controllers: int = 0,
                 base_port: int = 9092, overrides: Mapping[str, str] | None = None,
                 hosts: Sequence[str] | None = None) -> ClusterInfo:
    """Node layout: `controllers == 0` makes `nodes` combined nodes; otherwise `controllers`
    controller-only nodes (ids 1..K) and `nodes` broker-only nodes (ids K+1..).

    `hosts` gives each node (in id order) its own loopback address for its listeners and
    Raft port; by default every node uses 127.0.0.1."""
    if nodes < 1 and controllers == 0:
        raise ValueError("a cluster needs at least one node")
    if controllers < 0 or nodes < 0:
        raise ValueError("node counts must not be negative")
    overrides = dict(overrides or {})
    offset = int(overrides.get("raftka.raft.port.offset", DEFAULT_RAFT_PORT_OFFSET))
    planned: list[NodeInfo] = []
    if controllers == 0:
        for index in range(nodes):
            controller_port = base_port + CONTROLLER_PORT_STEP + index
            planned.append(NodeInfo(index + 1, ("broker", "controller"),
                                    node_dir(cluster_dir, index + 1), base_port + index,
                                    controller_port, controller_port + offset))
    else:
        for index in range(controllers):
            controller_port = base_port + CONTROLLER_PORT_STEP + index
            planned.append(NodeInfo(index + 1, ("controller",), node_dir(cluster_dir, index + 1),
                                    None, controller_port, controller_port + offset))
        for index in range(nodes):
            node_id = controllers + index + 1
            planned.append(NodeInfo(node_id, ("broker",), node_dir(cluster_dir, node_id),
                                    base_port + index, None, None))
    if hosts is not None:
        for node, host in zip(planned, check_hosts(hosts, len(planned))):
            node.host = host
    if overrides.get("raftka.metrics.listener", None) is None:
        for index, node in enumerate(planned):
            node.metrics_port = base_port + METRICS_PORT_STEP + index
    for port in (p for node in planned for p in node.ports().values()):
        if not 1 <= port <= 65535:
            raise ValueError(f"port {port} is out of range; choose another --base-port")
    voters = ",".join(f"{n.node_id}@{n.host}:{n.controller_port}" for n in planned
                      if n.is_controller)
    broker_count = sum(1 for n in planned if n.is_broker)
    for node in planned:
        node.properties = _node_properties(node, voters, broker_count, overrides)
    return ClusterInfo(cluster_dir, cluster_id, planned)


def check_hosts(hosts: Sequence[str], count: int) -> list[str]:
    """`hosts` as distinct IPv4 loopback addresses, one per node; ValueError otherwise
    (nothing may listen beyond loopback unless configured to, and Linux routes all of
    127.0.0.0/8 to the loopback interface)."""
    cleaned = [host.strip() for host in hosts]
    if len(cleaned) != count:
        raise ValueError(f"--hosts lists {len(cleaned)} addresses for {count} nodes")
    for host in cleaned:
        try:
            address = ipaddress.IPv4Address(host)
        except ValueError:
            raise ValueError(f"--hosts: {host!r} is not an IPv4 address") from None
        if not address.is_loopback:
            raise ValueError(f"--hosts: {host} is not a loopback address (127.0.0.0/8)")
    if len(set(cleaned)) != len(cleaned):
        raise ValueError("--hosts: each node needs an address of its own")
    return cleaned


def _node_properties(node: NodeInfo, voters: str, broker_count: int,
                     overrides: Mapping[str, str]) -> dict[str, str]:
    listeners = []
    if node.is_broker:
        listeners.append(f"PLAINTEXT://{node.host}:{node.client_port}")
    if node.is_controller:
        listeners.append(f"CONTROLLER://{node.host}:{node.controller_port}")
    props = {
        "process.roles": ",".join(node.roles),
        "node.id": str(node.node_id),
        "controller.quorum.voters": voters,
        "listeners": ",".join(listeners),
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(node.dir / "data"),
    }
    if node.metrics_port is not None:
        props["raftka.metrics.listener"] = f"http://{node.host}:{node.metrics_port}"
    if node.is_broker:
        props["advertised.listeners"] = f"PLAINTEXT://{node.host}:{node.client_port}"
        props["inter.broker.listener.name"] = "PLAINTEXT"
    # Internal topics cannot be replicated more widely than there are brokers.
    replication = str(min(3, max(broker_count, 1)))
    props["offsets.topic.replication.factor"] = replication
    props["transaction.state.log.replication.factor"] = replication
    props["transaction.state.log.min.isr"] = str(min(2, int(replication)))
    props.update(overrides)
    return props
