"""The node process: the pieces a node runs for its roles, started and stopped in order.

Every node first binds all its listeners (Kafka binds its socket server first), so a taken
port stops start-up before the cluster sees the node. Every node hosts the metadata state
machine in a Raft quorum member: a voter when `process.roles` has `controller`, an observer
otherwise. A controller serves controller RPCs on its CONTROLLER listener(s). A broker
registers and heartbeats with the active controller, follows metadata through the
`MetadataBridge`, and starts accepting on its client listeners once the controller has seen
it catch up (Kafka's broker start-up order), answering with the broker router: the
metadata-side handlers plus whatever its components register.

Stopping (the `shutdown` event): the broker's controlled shutdown, then its listeners and
components, then the controller's listeners and tasks, and last the Raft quorum.
"""

from __future__ import annotations

import errno
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Protocol, Sequence

import trio

from broker.config.endpoints import Listener
from broker.controller_channel import ControllerChannel
from broker.handlers import AutoCreateTopics, install_broker_handlers
from broker.dataplane import data_plane_component
from broker.group.component import group_coordinator_component
from broker.lifecycle import BrokerIdentity, BrokerLifecycleManager, LifecycleSettings
from broker.metadata_bridge import MetadataBridge
from broker.network import NetworkServer, RequestRouter, ServerSettings
from kraft.config import QuorumConfig
from kraft.errors import QuorumError
from kraft.metadata_state_machine import MetadataStateMachine
from kraft.quorum import RaftQuorum
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage

if TYPE_CHECKING:
    from broker.config import ServerConfig

logger = logging.getLogger(__name__)

# Bound on waiting for the controller's agreement to shut down (Kafka's broker retries
# controlled shutdown; this keeps a stop from hanging when the quorum is gone).
CONTROLLED_SHUTDOWN_TIMEOUT_S = 30.0


class NodeStartupError(RuntimeError):
    """The node could not start; the message says why."""


class BrokerComponent(Protocol):
    """A part of the broker that serves APIs and acts on metadata (partition logs, replica
    manager, group coordinator, ...). `run` holds its background work until cancelled."""

    def register(self, router: RequestRouter) -> None:
        """Install this component's request handlers on the broker router."""
        ...

    async def on_metadata(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """Act on a new image (become leader/follower, delete partitions, ...)."""
        ...

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
                  ) -> None:
        """Start, report started, run until cancelled; clean up under a shielded scope."""
        ...


@dataclass
class BrokerRuntime:
    """What broker components are built from."""

    config: "ServerConfig"
    cluster_id: str
    bridge: MetadataBridge
    channel: ControllerChannel
    lifecycle: BrokerLifecycleManager
    # A component that creates topics on first use sets this (Metadata auto-creation).
    auto_create_topics: AutoCreateTopics | None = None
    components: list[BrokerComponent] = field(default_factory=list)


ComponentFactory = Callable[[BrokerRuntime], BrokerComponent]
# The broker's components (the data plane adds its own here), built in order, each seeing
# the runtime its predecessors filled. Their modules should import BrokerRuntime and
# BrokerComponent under TYPE_CHECKING only, so this module can import them without a cycle.
# The group coordinator writes through the data plane's partitions and overrides its interim
# group-API answers, so it comes after it.
COMPONENT_FACTORIES: tuple[ComponentFactory, ...] = (data_plane_component,
                                                     group_coordinator_component)


def quorum_config(config: "ServerConfig") -> QuorumConfig:
    """The Raft member's settings from the server configuration."""
    return QuorumConfig(
        node_id=config.node_id,
        voters={voter: config.raft_address_for(voter) for voter in config.voters},
        log_dir=config.metadata_log_dir,  # type: ignore[arg-type]
        password=config.quorum_password,
        is_voter=config.is_controller,
        snapshot_interval_entries=int(config.get("metadata.log.max.snapshot.interval")),  # type: ignore[call-overload]
        snapshot_interval_bytes=int(config.get(  # type: ignore[call-overload]
            "metadata.log.max.record.bytes.between.snapshots")),
        snapshot_interval_ms=int(config.get("metadata.log.max.snapshot.interval.ms")),  # type: ignore[call-overload]
        election_timeout_ms=int(config.get("controller.quorum.election.timeout.ms")),  # type: ignore[call-overload]
        fetch_timeout_ms=int(config.get("controller.quorum.fetch.timeout.ms")),  # type: ignore[call-overload]
        request_timeout_ms=int(config.get("controller.quorum.request.timeout.ms")),  # type: ignore[call-overload]
    )


def broker_identity(config: "ServerConfig", cluster_id: str) -> BrokerIdentity:
    """The registration facts of this broker, with a fresh incarnation id."""
    from broker.config.uuids import parse_uuid
    from broker.log.checkpoints import read_meta_properties

    dir_ids = []
    for directory in config.log_dirs:
        meta = read_meta_properties(directory) or {}
        if meta.get("directory.id"):
            dir_ids.append(parse_uuid(meta["directory.id"]))
    listeners = tuple((l.name, l.host, l.port, l.security_protocol)
                      for l in config.advertised_listeners)
    rack = config.get("broker.rack")
    return BrokerIdentity(config.node_id, cluster_id, listeners,
                          rack=None if rack is None else str(rack), log_dir_ids=tuple(dir_ids))


def formatted_cluster_id(config: "ServerConfig") -> str:
    """The cluster id `raftka storage format` wrote (the CLI checked the dirs agree)."""
    from broker.log.checkpoints import read_meta_properties

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
        # The broker's handlers are installed once its components exist (`_run_broker`);
        # its listeners are bound on this router before that.
        self.broker_router = RequestRouter()

    async def run(self) -> None:
        config = self.config
        controller = None
        if config.is_controller:
            from broker.controller import QuorumController, controller_settings_from_config

            # Built before the quorum starts so its publisher sees the replayed journal.
            controller = QuorumController(
                config.node_id, self.quorum, self.state,
                controller_settings_from_config(config, cluster_id=self.cluster_id),
                cluster_id=self.cluster_id, config=config)
        controller_router = RequestRouter()
        controller_server = None
        if controller is not None:
            controller_server = NetworkServer(self.controller_listeners, controller_router,
                                              self.settings)
        broker_server = None
        if config.is_broker:
            broker_server = NetworkServer(self.broker_listeners, self.broker_router,
                                          self.settings)
        servers = [server for server in (controller_server, broker_server) if server]
        try:
            # Every listener is bound before the node joins the quorum or registers, as
            # Kafka binds its socket server first: a taken port stops start-up before the
            # cluster sees this node. Accepting starts later, when each server serves.
            for server in servers:
                await _bind(server)
            await self._start_quorum()
            async with trio.open_nursery() as nursery:
                await nursery.start(self.bridge.run)
                if controller is not None and controller_server is not None:
                    controller.register(controller_router)
                    await nursery.start(controller.run)
                    controller_done = await _start_server(nursery, controller_server)
                if broker_server is not None:
                    await self._run_broker(broker_server)
                else:
                    await self.shutdown.wait()
                if controller_server is not None:
                    controller_server.stop()
                    await controller_done.wait()
                nursery.cancel_scope.cancel()
        finally:
            for server in servers:
                await server.aclose()

    async def _start_quorum(self) -> None:
        try:
            await trio.to_thread.run_sync(self.quorum.start)
        except QuorumError as exc:
            if "bind" in str(exc):
                raise NodeStartupError(_raft_port_in_use(self.config, exc)) from exc
            raise NodeStartupError(f"cannot start the metadata quorum: {exc}") from exc

    async def _run_broker(self, server: NetworkServer) -> None:
        config = self.config
        channel = ControllerChannel(config.voters, f"raftka-broker-{config.node_id}")
        lifecycle = BrokerLifecycleManager(
            broker_identity(config, self.cluster_id), channel, lambda: self.bridge.image.offset,
            LifecycleSettings(
                heartbeat_interval_s=int(config.get("broker.heartbeat.interval.ms")) / 1000,  # type: ignore[call-overload]
                session_timeout_s=int(config.get("broker.session.timeout.ms")) / 1000,  # type: ignore[call-overload]
                request_timeout_s=int(config.get("controller.quorum.request.timeout.ms")) / 1000),  # type: ignore[call-overload]
            clean_shutdown_dir=config.metadata_log_dir)
        runtime = BrokerRuntime(config, self.cluster_id, self.bridge, channel, lifecycle)
        for factory in COMPONENT_FACTORIES:
            runtime.components.append(factory(runtime))
        router = self.broker_router
        install_broker_handlers(router, image=lambda: self.bridge.image,
                                cluster_id=self.cluster_id, channel=channel,
                                auto_create=runtime.auto_create_topics)
        for component in runtime.components:
            component.register(router)
            self.bridge.add_publisher(component)
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(lifecycle.run)
                async with trio.open_nursery() as components:
                    for component in runtime.components:
                        await components.start(component.run)
                    if await self._wait_caught_up(lifecycle):
                        server_done = await _start_server(nursery, server)
                        logger.info("broker %d serving clients on %s", config.node_id,
                                    _describe(self.broker_listeners))
                        await self.shutdown.wait()
                        await lifecycle.controlled_shutdown(CONTROLLED_SHUTDOWN_TIMEOUT_S)
                        server.stop()
                        await server_done.wait()
                    components.cancel_scope.cancel()
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                await channel.aclose()

    async def _wait_caught_up(self, lifecycle: BrokerLifecycleManager) -> bool:
        """True once the controller saw this broker catch up; False if shutdown came first.
        Records a start-up error after `initial.broker.registration.timeout.ms`."""
        timeout_s = int(self.config.get("initial.broker.registration.timeout.ms")) / 1000  # type: ignore[call-overload]
        caught_up = False
        with trio.move_on_after(timeout_s) as waiting:
            async with trio.open_nursery() as nursery:
                async def caught_up_task() -> None:
                    nonlocal caught_up
                    await lifecycle.wait_until(lambda m: m.is_caught_up)
                    caught_up = True
                    nursery.cancel_scope.cancel()

                async def shutdown_task() -> None:
                    await self.shutdown.wait()
                    nursery.cancel_scope.cancel()

                nursery.start_soon(caught_up_task)
                nursery.start_soon(shutdown_task)
        if waiting.cancelled_caught and not caught_up:
            message = (f"broker {self.config.node_id} was not registered and caught up with "
                       f"the metadata log within initial.broker.registration.timeout.ms "
                       f"({timeout_s * 1000:.0f} ms)")
            logger.error("%s", message)
            self.startup_error = NodeStartupError(message)
        return caught_up


async def _bind(server: NetworkServer) -> None:
    """Bind the server's listeners; a port that cannot be bound stops start-up."""
    try:
        await server.bind()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        hint = ("change the port in listeners or stop the process that holds it"
                if exc.errno == errno.EADDRINUSE else "check listeners")
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


def _describe(listeners: Sequence[Listener]) -> str:
    return ", ".join(listener.uri() for listener in listeners)
