"""The node process: the pieces a node runs for its roles, started and stopped in order.

Every node hosts the metadata state machine in a Raft quorum member: a voter when
`process.roles` has `controller`, an observer otherwise. A controller serves controller RPCs
on its CONTROLLER listener(s). A broker (`broker.server.BrokerServer`) registers and
heartbeats with the active controller, follows metadata through the `MetadataBridge`, and
opens its client listeners once the controller has seen it catch up (Kafka's broker
start-up order).

Stopping (the `shutdown` event): the broker (controlled shutdown, listeners, then its parts
in reverse), then the controller's listeners and tasks, and last the Raft quorum.
"""

from __future__ import annotations

import errno
import logging
from typing import TYPE_CHECKING

import trio

from broker.apis.request import RequestRouter
from broker.controller_client import ControllerClient
from broker.controller_server import QuorumController, controller_settings_from_config
from broker.errors import NodeStartupError
from broker.lifecycle import LifecycleSettings
from broker.log.checkpoints import read_meta_properties
from broker.metadata_bridge import MetadataBridge
from broker.network import NetworkServer, ServerSettings
from broker.server import BrokerServer
from kraft.config import QuorumConfig
from kraft.errors import QuorumError
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
        if config.is_controller:
            # Built before the quorum starts so its publisher sees the replayed journal.
            controller = QuorumController(
                config.node_id, self.quorum, self.state,
                controller_settings_from_config(config, cluster_id=self.cluster_id),
                cluster_id=self.cluster_id, config=config)
        await self._start_quorum()
        async with trio.open_nursery() as nursery:
            await nursery.start(self.bridge.run)
            controller_server = None
            if controller is not None:
                router = RequestRouter()
                controller.register(router)
                await nursery.start(controller.run)
                controller_server = NetworkServer(self.controller_listeners, router,
                                                  self.settings)
                controller_done = await _start_server(nursery, controller_server)
            if config.is_broker:
                await self._run_broker()
            else:
                await self.shutdown.wait()
            if controller_server is not None:
                controller_server.stop()
                await controller_done.wait()
            nursery.cancel_scope.cancel()

    async def _start_quorum(self) -> None:
        try:
            await trio.to_thread.run_sync(self.quorum.start)
        except QuorumError as exc:
            if "bind" in str(exc):
                raise OSError(errno.EADDRINUSE, str(exc)) from exc
            raise NodeStartupError(f"cannot start the metadata quorum: {exc}") from exc

    async def _run_broker(self) -> None:
        config = self.config
        controller = ControllerClient(config.voters, f"raftka-broker-{config.node_id}")
        lifecycle = LifecycleSettings(
            heartbeat_interval_s=config.broker_heartbeat_interval_ms / 1000,
            session_timeout_s=config.broker_session_timeout_ms / 1000,
            request_timeout_s=config.controller_quorum_request_timeout_ms / 1000)
        broker = BrokerServer(config, self.cluster_id, lambda: self.bridge.image,
                              metadata=self.bridge, controller=controller,
                              lifecycle=lifecycle, listeners=self.broker_listeners)
        try:
            await broker.run(self.shutdown)
        finally:
            with trio.CancelScope(shield=True):
                await controller.aclose()
        if broker.startup_error is not None:
            self.startup_error = broker.startup_error


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
