"""The node process: the pieces a node runs for its roles, started and stopped in order.

Every node first binds all its listeners (Kafka binds its socket server first), so a taken
port stops start-up before the cluster sees the node. Every node hosts the metadata state
machine in a Raft quorum member: a voter when `process.roles` has `controller`, an observer
otherwise. A controller serves controller RPCs on its CONTROLLER listener(s). A broker
(`broker.server.BrokerServer`) registers and heartbeats with the active controller, follows
metadata through the `MetadataBridge`, and starts accepting on its client listeners once the
controller has seen it catch up (Kafka's broker start-up order).

Stopping (the `shutdown` event): the broker (controlled shutdown, listeners, then its parts
in reverse), then the controller's listeners and tasks, and last the Raft quorum.
"""

from __future__ import annotations

import errno
import logging
from typing import TYPE_CHECKING

import trio
from prometheus_client import CollectorRegistry

from broker.apis.authorization import (
    CONTROLLER_CLUSTER_OPERATIONS,
    Authorization,
    RequestAuthorizer,
    authorizer_from_config,
)
from broker.apis.request import RequestRouter
from broker.controller_client import ControllerClient
from broker.controller_server import QuorumController, controller_settings_from_config
from broker.errors import NodeStartupError
from broker.lifecycle import LifecycleSettings
from broker.log.checkpoints import read_meta_properties
from broker.metadata_bridge import MetadataBridge
from broker.metrics.controller_collector import ControllerCollector, ElectionCounter
from broker.metrics.endpoint import MetricsEndpoint
from broker.network import NetworkServer, ServerSettings
from broker.server import BrokerServer
from kraft.config import QuorumConfig
from kraft.errors import QuorumError, RaftPortBindError
from kraft.metadata_state_machine import MetadataStateMachine
from kraft.quorum import RaftQuorum

if TYPE_CHECKING:
    from broker.config import ServerConfig

logger = logging.getLogger(__name__)


def quorum_config(config: "ServerConfig") -> QuorumConfig:
    """The Raft member's settings from the server configuration."""
    return QuorumConfig(
        node_id=config.node_id,
        voters={voter: config.raft_address_for(voter) for voter in config.voters},
        log_dir=config.metadata_log_dir,
        password=config.quorum_password,
        is_voter=config.is_controller,
        snapshot_interval_entries=config.metadata_log_max_snapshot_interval,
        snapshot_interval_bytes=config.metadata_log_max_record_bytes_between_snapshots,
        snapshot_interval_ms=config.metadata_log_max_snapshot_interval_ms,
        election_timeout_ms=config.controller_quorum_election_timeout_ms,
        fetch_timeout_ms=config.controller_quorum_fetch_timeout_ms,
        request_timeout_ms=config.controller_quorum_request_timeout_ms,
        source_host=config.client_bind_address,
    )


def formatted_cluster_id(config: "ServerConfig") -> str:
    """The cluster id `raftka storage format` wrote (the CLI checked the dirs agree)."""
    meta = read_meta_properties(config.metadata_log_dir) or {}
    cluster_id = meta.get("cluster.id") or config.cluster_id
    if not cluster_id:
        raise NodeStartupError(f"{config.metadata_log_dir} has no cluster id; format it first")
    return cluster_id


async def node_main(config: "ServerConfig", shutdown: trio.Event) -> None:
    """Run the node until `shutdown` is set, then stop it gracefully and return."""
    cluster_id = formatted_cluster_id(config)
    state = MetadataStateMachine()
    bridge = MetadataBridge()
    state.add_publisher(bridge)
    quorum = RaftQuorum(quorum_config(config), state)
    node = _Node(config, cluster_id, state, bridge, quorum, shutdown)
    try:
        await node.run()
    finally:
        with trio.CancelScope(shield=True):
            await quorum.aclose()
    if node.startup_error is not None:
        raise node.startup_error
    logger.info("node %d: all services stopped", config.node_id)


class _Node:
    """One node's services and their start/stop order."""

    def __init__(self, config: "ServerConfig", cluster_id: str, state: MetadataStateMachine,
                 bridge: MetadataBridge, quorum: RaftQuorum, shutdown: trio.Event) -> None:
        self.config = config
        self.cluster_id = cluster_id
        self.state = state
        self.bridge = bridge
        self.quorum = quorum
        self.shutdown = shutdown
        self.settings = ServerSettings.from_config(config)
        self.startup_error: Exception | None = None
        controller_names = set(config.controller_listener_names)
        self.controller_listeners = [l for l in config.listeners if l.name in controller_names]
        self.broker_listeners = [l for l in config.listeners if l.name not in controller_names]

    async def run(self) -> None:
        config = self.config
        controller = None
        controller_server = None
        authorizer = authorizer_from_config(config)
        controller_router = RequestRouter(RequestAuthorizer(
            Authorization(authorizer, lambda: self.state.image), CONTROLLER_CLUSTER_OPERATIONS))
        registry = CollectorRegistry()
        listener = config.metrics_listener
        metrics = None if listener is None else MetricsEndpoint(listener, registry)
        if config.is_controller:
            # Built before the quorum starts so its publisher sees the replayed journal.
            controller = QuorumController(
                config.node_id, self.quorum, self.state,
                controller_settings_from_config(config, cluster_id=self.cluster_id),
                cluster_id=self.cluster_id, config=config)
            controller_server = NetworkServer(self.controller_listeners, controller_router,
                                              self.settings,
                                              ssl_contexts=config.ssl_server_contexts())
            elections = ElectionCounter(lambda: controller is not None and controller.is_active)
            self.state.add_publisher(elections)
            registry.register(ControllerCollector(controller, elections))
        broker = None
        controller_client = None
        if config.is_broker:
            controller_client = ControllerClient(config.voters,
                                                 f"raftka-broker-{config.node_id}",
                                                 local_address=config.client_bind_address,
                                                 quorum_leader=self._quorum_leader,
                                                 security=config.controller_security)
            broker = BrokerServer(
                config, self.cluster_id, lambda: self.bridge.image, metadata=self.bridge,
                controller=controller_client, listeners=self.broker_listeners,
                lifecycle=LifecycleSettings(
                    heartbeat_interval_s=config.broker_heartbeat_interval_ms / 1000,
                    session_timeout_s=config.broker_session_timeout_ms / 1000,
                    request_timeout_s=config.controller_quorum_request_timeout_ms / 1000),
                metrics=registry)
        servers = [server for server in (controller_server,
                                         broker.network if broker else None) if server]
        try:
            # Every listener is bound before the node joins the quorum or registers, as
            # Kafka binds its socket server first: a taken port stops start-up before the
            # cluster sees this node. Accepting starts later, when each server serves.
            for server in servers:
                await _bind(server)
            if metrics is not None:
                _bind_metrics(metrics)
            await self._start_quorum()
            async with trio.open_nursery() as nursery:
                if metrics is not None:
                    await nursery.start(metrics.serve)
                await nursery.start(self.bridge.run)
                if controller is not None and controller_server is not None:
                    controller.register(controller_router)
                    await nursery.start(controller.run)
                    controller_done = await _start_server(nursery, controller_server)
                if broker is not None:
                    await broker.run(self.shutdown)
                    self.startup_error = broker.startup_error
                else:
                    await self.shutdown.wait()
                if controller_server is not None:
                    controller_server.stop()
                    await controller_done.wait()
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                for server in servers:
                    await server.aclose()
                if metrics is not None:
                    metrics.close()
                if controller_client is not None:
                    await controller_client.aclose()

    def _quorum_leader(self) -> int | None:
        return self.quorum.status().leader_id

    async def _start_quorum(self) -> None:
        try:
            await trio.to_thread.run_sync(self.quorum.start)
        except RaftPortBindError as exc:
            raise NodeStartupError(_raft_port_in_use(self.config, exc)) from exc
        except QuorumError as exc:
            raise NodeStartupError(f"cannot start the metadata quorum: {exc}") from exc


async def _bind(server: NetworkServer) -> None:
    """Bind the server's listeners; a port that cannot be bound stops start-up."""
    try:
        await server.bind()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        hint = ("change the port in listeners or stop the process that holds it"
                if exc.errno == errno.EADDRINUSE else "check listeners")
        raise NodeStartupError(f"{reason}; {hint}") from exc


def _bind_metrics(metrics: MetricsEndpoint) -> None:
    """Bind the metrics listener; a port that cannot be bound stops start-up naming the key."""
    try:
        metrics.bind()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        hint = ("change raftka.metrics.listener (empty disables it) or stop the process that "
                "holds the port")
        raise NodeStartupError(f"{reason}; {hint}") from exc


def _raft_port_in_use(config: "ServerConfig", exc: QuorumError) -> str:
    """The Raft port is not a listener: say where it comes from and which key moves it."""
    port = config.voters[config.node_id][1]
    return (f"{exc}; the Raft port is this voter's controller.quorum.voters port {port} + "
            f"raftka.raft.port.offset {config.raft_port_offset}: free it or change "
            f"raftka.raft.port.offset")


async def _start_server(nursery: trio.Nursery, server: NetworkServer) -> trio.Event:
    """Start `server` in `nursery`; the returned event is set once it has stopped."""
    done = trio.Event()

    async def serve(*, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            await server.serve(task_status=task_status)
        finally:
            done.set()

    await nursery.start(serve)
    return done
