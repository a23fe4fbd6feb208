"""The broker role of a node (Kafka's BrokerServer): its parts built in one start-up method,
in the order they depend on each other, and stopped in reverse.

Start-up: the listeners may be bound first (`network.bind()`, Kafka binds its socket server
before anything else), then partition logs, replica manager, replica fetchers and ISR
changes, producer ids and topic auto-creation, group coordinator, the request layer, the
lifecycle (register, heartbeat, wait until the controller saw this broker catch up) and
last accepting on the client listeners. Stopping: controlled shutdown, listeners, then
every part in reverse order.
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, Sequence

import trio

from broker.apis.broker_apis import install_broker_apis
from broker.apis.authorization import (
    BROKER_CLUSTER_OPERATIONS,
    Authorization,
    RequestAuthorizer,
    authorizer_from_config,
)
from broker.apis.request import Authorizer, RequestRouter
from broker.auto_create import TopicAutoCreator
from broker.config.endpoints import Listener
from broker.config.uuids import parse_uuid
from broker.controller_client import ControllerClient
from broker.errors import NodeStartupError
from broker.group.coordinator import GroupCoordinator
from broker.group.model import GroupSettings
from broker.group.offsets_log import ReplicaOffsetsLog
from broker.group.offsets_topic import (
    CreateTopic,
    OffsetsTopicCreator,
    OffsetsTopicSettings,
    channel_create_topic,
)
from broker.lifecycle import BrokerIdentity, BrokerLifecycleManager, LifecycleSettings
from broker.log.checkpoints import read_meta_properties
from broker.log.maintenance import LogMaintenance
from broker.log.manager import LogManager
from broker.metadata_bridge import MetadataBridge
from broker.metrics import METRICS_FILE, MetricsRegistry, MetricsReporter
from broker.network import NetworkServer, ServerSettings
from broker.producer_id_manager import BlockSource, ProducerIdManager, controller_block_source
from broker.replica.alter_partition import AlterPartitionManager
from broker.replica.manager import ReplicaManager
from broker.replica_fetcher import FetcherSettings, ReplicaFetcherManager
from broker.sasl.sessions import SaslSessions
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage

if TYPE_CHECKING:
    from broker.config import ServerConfig

logger = logging.getLogger(__name__)

# Bound on waiting for the controller's agreement to shut down (Kafka's broker retries
# controlled shutdown; this keeps a stop from hanging when the quorum is gone).
CONTROLLED_SHUTDOWN_TIMEOUT_S = 30.0

Run = Callable[..., Awaitable[Any]]


class _Parts:
    """Starts background parts one after another; closing stops them in reverse order."""

    def __init__(self, stack: AsyncExitStack) -> None:
        self._stack = stack

    async def start(self, run: Run, *args: Any) -> Any:
        nursery = await self._stack.enter_async_context(trio.open_nursery())
        self._stack.callback(nursery.cancel_scope.cancel)
        return await nursery.start(run, *args)


class BrokerServer:
    """One broker: built and run by `run`, fed metadata through `on_metadata`.

    `metadata` delivers each new image to it once its parts exist (without one, the caller
    calls `on_metadata`). `controller` is the broker's client to the active controller (None: no ISR changes,
    no forwarding, no auto-creation, producer ids only from `producer_id_source`);
    `lifecycle` makes it register and heartbeat, and open its listeners only once the
    controller saw it catch up with the metadata log. `create_offsets_topic` replaces
    creating `__consumer_offsets` through the controller.
    """

    def __init__(self, config: "ServerConfig", cluster_id: str,
                 image: Callable[[], MetadataImage], *,
                 metadata: MetadataBridge | None = None,
                 controller: ControllerClient | None = None,
                 lifecycle: LifecycleSettings | None = None,
                 listeners: Sequence[Listener] | None = None,
                 producer_id_source: BlockSource | None = None,
                 create_offsets_topic: CreateTopic | None = None,
                 authorizer: Authorizer | None = None) -> None:
        self.config = config
        self.cluster_id = cluster_id
        self.image = image
        self.metadata = metadata
        self.controller = controller
        self.lifecycle_settings = lifecycle
        self.listeners = list(config.listeners if listeners is None else listeners)
        self.producer_id_source = producer_id_source
        self.create_offsets_topic = create_offsets_topic
        self.startup_error: NodeStartupError | None = None
        self.addresses: Mapping[str, tuple[str, int]] = {}
        # The listeners exist from the start so a node can bind them before anything else
        # (`network.bind()`); the request layer is installed on the router by `run`.
        # Per-resource checks for the handlers; request-wide ones in the router's hook
        # (`authorizer` replaces the hook, e.g. in tests).
        self.authorization = Authorization(authorizer_from_config(config), image)
        self.router = RequestRouter(authorizer if authorizer is not None else RequestAuthorizer(
            self.authorization, BROKER_CLUSTER_OPERATIONS))
        self.network = NetworkServer(self.listeners, self.router,
                                     ServerSettings.from_config(config),
                                     sasl=SaslSessions(config.sasl_listeners, image))
        # Built by `run`.
        self.log_manager: LogManager
        self.replica_manager: ReplicaManager
        self.auto_creator: TopicAutoCreator
        self.group_coordinator: GroupCoordinator
        self.lifecycle: BrokerLifecycleManager | None = None

    async def run(self, shutdown: trio.Event, *,
                  task_status: trio.TaskStatus[Mapping[str, tuple[str, int]]]
                  = trio.TASK_STATUS_IGNORED) -> None:
        """Build every part, start them in order, serve clients until `shutdown` is set,
        then stop in reverse order."""
        config = self.config
        controller = self.controller
        # -- build ---------------------------------------------------------------------------
        self.log_manager = logs = LogManager(config.log_dirs, config.log_defaults())
        maintenance = LogMaintenance(logs, config)
        self.replica_manager = replicas = ReplicaManager(config.node_id, logs,
                                                         config.log_defaults())
        metrics = MetricsRegistry()
        register_replica_gauges(metrics, replicas)
        reporter = MetricsReporter(metrics, logs.log_dirs[0] / METRICS_FILE,
                                   config.raftka_metrics_interval_ms, config.node_id)
        fetchers = ReplicaFetcherManager(config.node_id, replicas,
                                         FetcherSettings.from_config(config))
        isr_changes = None
        if controller is not None:
            # Leaders send ISR changes to the controller.
            isr_changes = AlterPartitionManager(
                config.node_id, controller, self._broker_epoch, lambda: replicas.image,
                on_change=lambda partition: replicas.notify(partition.key))
            replicas.isr_sender = isr_changes
        producer_ids = self._producer_ids()
        self.auto_creator = TopicAutoCreator(config, controller, self.image)
        self.group_coordinator = groups = self._group_coordinator(replicas)
        install_broker_apis(self.router, config, self.cluster_id, self.image,
                            replicas=replicas, groups=groups,
                            # Off, Metadata neither creates nor checks CREATE (Kafka's order).
                            auto_create=(self.auto_creator.ensure_topics
                                         if self.auto_creator.enabled else None),
                            producer_ids=producer_ids, controller=controller,
                            authorization=self.authorization)
        if self.lifecycle_settings is not None and controller is not None:
            self.lifecycle = BrokerLifecycleManager(
                broker_identity(config, self.cluster_id), controller,
                lambda: self.image().offset, self.lifecycle_settings,
                clean_shutdown_dir=config.metadata_log_dir)
        network = self.network
        if self.metadata is not None:
            self.metadata.add_publisher(self)
        # -- start, serve, stop in reverse -----------------------------------------------------
        try:
            async with AsyncExitStack() as stack:
                parts = _Parts(stack)
                await parts.start(maintenance.run)
                await parts.start(reporter.run)
                await parts.start(fetchers.run)
                if isr_changes is not None:
                    await parts.start(isr_changes.run)
                    await parts.start(replicas.run_isr_expiration,
                                      config.replica_lag_time_max_ms)
                await parts.start(self.auto_creator.run)
                await parts.start(groups.run)
                if self.lifecycle is not None:
                    await parts.start(self.lifecycle.run)
                    if not await self._wait_caught_up(self.lifecycle, shutdown):
                        return
                async with trio.open_nursery() as serving:
                    self.addresses = await serving.start(network.serve)
                    logger.info("broker %d serving clients on %s", config.node_id,
                                ", ".join(listener.uri() for listener in self.listeners))
                    task_status.started(self.addresses)
                    await shutdown.wait()
                    if self.lifecycle is not None:
                        await self.lifecycle.controlled_shutdown(CONTROLLED_SHUTDOWN_TIMEOUT_S)
                    # In-flight requests get the network's grace period to finish.
                    network.stop()
        finally:
            with trio.CancelScope(shield=True):
                await network.aclose()
                logs.close()
                logger.info("closed the partition logs")

    async def on_metadata(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """Act on a new image: replicas first (so a partition is led before the group
        coordinator loads it), then the group coordinator."""
        self.replica_manager.on_metadata_update(delta, image)
        await self.group_coordinator.on_metadata(delta, image)

    def _broker_epoch(self) -> int:
        return -1 if self.lifecycle is None else self.lifecycle.broker_epoch

    def _producer_ids(self) -> ProducerIdManager | None:
        source = self.producer_id_source
        if source is None and self.controller is not None:
            source = controller_block_source(self.controller, self.config.node_id,
                                             self._broker_epoch)
        return None if source is None else ProducerIdManager(source)

    def _group_coordinator(self, replicas: ReplicaManager) -> GroupCoordinator:
        config = self.config
        create = self.create_offsets_topic
        if create is None and self.controller is not None:
            create = channel_create_topic(self.controller)
        creator = OffsetsTopicCreator(OffsetsTopicSettings.from_config(config), create)
        log = ReplicaOffsetsLog(replicas, config.offsets_commit_timeout_ms)
        return GroupCoordinator(config.node_id, GroupSettings.from_config(config), log,
                                image=self.image, topic_creator=creator)

    async def _wait_caught_up(self, lifecycle: BrokerLifecycleManager,
                              shutdown: trio.Event) -> bool:
        """True once the controller saw this broker catch up; False if shutdown came first.
        Records a start-up error after `initial.broker.registration.timeout.ms`."""
        timeout_ms = self.config.initial_broker_registration_timeout_ms
        caught_up = False
        with trio.move_on_after(timeout_ms / 1000) as waiting:
            async with trio.open_nursery() as nursery:
                async def caught_up_task() -> None:
                    nonlocal caught_up
                    await lifecycle.wait_until(lambda m: m.is_caught_up)
                    caught_up = True
                    nursery.cancel_scope.cancel()

                async def shutdown_task() -> None:
                    await shutdown.wait()
                    nursery.cancel_scope.cancel()

                nursery.start_soon(caught_up_task)
                nursery.start_soon(shutdown_task)
        if waiting.cancelled_caught and not caught_up:
            message = (f"broker {self.config.node_id} was not registered and caught up with "
                       f"the metadata log within initial.broker.registration.timeout.ms "
                       f"({timeout_ms} ms)")
            logger.error("%s", message)
            self.startup_error = NodeStartupError(message)
        return caught_up


def register_replica_gauges(registry: MetricsRegistry, replicas: ReplicaManager) -> None:
    """The ReplicaManager's gauges under Kafka's names (kafka.server:type=ReplicaManager,
    plus the controller's OfflinePartitionsCount as this broker's image shows it)."""
    registry.gauge("UnderReplicatedPartitions", lambda: replicas.under_replicated_partitions)
    registry.gauge("UnderMinIsrPartitionCount", lambda: replicas.under_min_isr_partitions)
    registry.gauge("LeaderCount", lambda: replicas.leader_count)
    registry.gauge("PartitionCount", lambda: replicas.partition_count)
    registry.gauge("OfflinePartitionsCount", lambda: replicas.offline_partitions)


def broker_identity(config: "ServerConfig", cluster_id: str) -> BrokerIdentity:
    """The registration facts of this broker, with a fresh incarnation id."""
    dir_ids = []
    for directory in config.log_dirs:
        meta = read_meta_properties(directory) or {}
        if meta.get("directory.id"):
            dir_ids.append(parse_uuid(meta["directory.id"]))
    listeners = tuple((l.name, l.host, l.port, l.security_protocol)
                      for l in config.advertised_listeners)
    return BrokerIdentity(config.node_id, cluster_id, listeners, rack=config.broker_rack,
                          log_dir_ids=tuple(dir_ids))
