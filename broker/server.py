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
import uuid
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, Sequence

import trio
from prometheus_client import CollectorRegistry

from broker.apis.broker_apis import install_broker_apis
from broker.apis.authorization import (
    BROKER_CLUSTER_OPERATIONS,
    Authorization,
    RequestAuthorizer,
    authorizer_from_config,
)
from broker.apis.request import Authorizer, RequestRouter
from broker.auto_create import TopicAutoCreator
from broker.config.dynamic import DynamicBrokerConfig
from broker.config.endpoints import Listener
from broker.config.uuids import parse_uuid
from broker.controller_client import ControllerClient
from broker.coordinator.log import ReplicaCoordinatorLog
from broker.coordinator.topic import CreateTopic, InternalTopicCreator, channel_create_topic
from broker.errors import NodeStartupError
from broker.forced_exit import register_flush
from broker.group.coordinator import GroupCoordinator
from broker.group.model import GroupCoordinatorSettings
from broker.group.routing import CONSUMER_OFFSETS_TOPIC, offsets_topic_settings
from broker.lifecycle import BrokerIdentity, BrokerLifecycleManager, LifecycleSettings
from broker.log.checkpoints import read_meta_properties
from broker.log.maintenance import LogMaintenance
from broker.log.manager import LogManager
from broker.metadata_bridge import MetadataBridge
from broker.metrics.broker_collector import BrokerCollector
from broker.metrics.remote_offsets import RemoteEndOffsets, admin_end_offsets
from broker.network import NetworkServer, ServerSettings
from broker.producer_id_manager import BlockSource, ProducerIdManager, controller_block_source
from broker.replica.alter_partition import AlterPartitionManager
from broker.replica.dynamic_log_defaults import DynamicLogDefaults
from broker.replica.manager import ReplicaManager
from broker.replica.replication_quota import ReplicationQuotas, apply_throttle_config
from broker.replica_fetcher import FetcherSettings, ReplicaFetcherManager
from broker.replica_fetcher.settings import inter_broker_sasl
from broker.stats.counters import RequestStats
from broker.txn.coordinator import TransactionCoordinator, TransactionSettings
from broker.txn.marker_sender import BrokerChannels, MarkerSender
from broker.txn.state_manager import TransactionStateManager
from broker.txn.state_topic import TRANSACTION_STATE_TOPIC, transaction_state_topic_settings
from broker.txn.verifier import CoordinatorVerifier
from broker.sasl.sessions import SaslSessions
from clients.clock import wall_clock_ms
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage

if TYPE_CHECKING:
    from broker.config import ServerConfig

logger = logging.getLogger(__name__)

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
    controller saw it catch up with the metadata log. `create_internal_topic` replaces
    creating the coordinators' internal topics (`__consumer_offsets`, `__transaction_state`)
    through the controller.
    """

    def __init__(self, config: "ServerConfig", cluster_id: str,
                 image: Callable[[], MetadataImage], *,
                 metadata: MetadataBridge | None = None,
                 controller: ControllerClient | None = None,
                 lifecycle: LifecycleSettings | None = None,
                 listeners: Sequence[Listener] | None = None,
                 producer_id_source: BlockSource | None = None,
                 create_internal_topic: CreateTopic | None = None,
                 authorizer: Authorizer | None = None,
                 metrics: CollectorRegistry | None = None) -> None:
        self.config = config
        self.cluster_id = cluster_id
        self.image = image
        self.metadata = metadata
        self.controller = controller
        self.lifecycle_settings = lifecycle
        self.listeners = list(config.listeners if listeners is None else listeners)
        self.producer_id_source = producer_id_source
        self.create_internal_topic = create_internal_topic
        self.startup_error: NodeStartupError | None = None
        # The node's /metrics registry: the broker adds its collector while it runs.
        self.metrics = metrics
        self.request_stats = RequestStats()
        self.addresses: Mapping[str, tuple[str, int]] = {}
        # The listeners exist from the start so a node can bind them before anything else
        # (`network.bind()`); the request layer is installed on the router by `run`.
        # Per-resource checks for the handlers; request-wide ones in the router's hook
        # (`authorizer` replaces the hook, e.g. in tests).
        self.authorization = Authorization(authorizer_from_config(config), image)
        self.router = RequestRouter(authorizer if authorizer is not None else RequestAuthorizer(
            self.authorization, BROKER_CLUSTER_OPERATIONS))
        self.router.observer = self.request_stats.record
        self.network = NetworkServer(self.listeners, self.router,
                                     ServerSettings.from_config(config),
                                     ssl_contexts=config.ssl_server_contexts(),
                                     sasl=SaslSessions(config.sasl_listeners, image))
        # Built by `run`.
        self.log_manager: LogManager
        self.replica_manager: ReplicaManager
        self.dynamic_config: DynamicBrokerConfig
        self.auto_creator: TopicAutoCreator
        self.group_coordinator: GroupCoordinator
        self.transaction_coordinator: TransactionCoordinator | None = None
        self.transaction_verifier: CoordinatorVerifier | None = None
        self.broker_channels: BrokerChannels | None = None
        self.collector: BrokerCollector
        self.lifecycle: BrokerLifecycleManager | None = None
        # Coordinators serve their partitions only once the replayed metadata is current.
        self.metadata_caught_up = False

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
        quotas = ReplicationQuotas.for_broker(config.node_id,
                                              config.get("replication.quota.window.num"),
                                              config.get("replication.quota.window.size.seconds"))
        replicas.leader_quota = quotas.leader
        replicas.replica_selector = config.replica_selector_class
        self.dynamic_config = dynamic = DynamicBrokerConfig(config)
        dynamic.subscribe(lambda values, image: apply_throttle_config(quotas, values, image))
        dynamic.subscribe(DynamicLogDefaults(replicas, config))
        dynamic.subscribe(lambda values, image: maintenance.reconfigure(values))
        dynamic.apply(self.image())
        fetchers = ReplicaFetcherManager(config.node_id, replicas,
                                         FetcherSettings.from_config(config), quotas.follower)
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
        self.transaction_coordinator = transactions = self._transaction_coordinator(
            replicas, producer_ids)
        install_broker_apis(self.router, config, self.cluster_id, self.image,
                            replicas=replicas, groups=groups,
                            # Off, Metadata neither creates nor checks CREATE (Kafka's order).
                            auto_create=(self.auto_creator.ensure_topics
                                         if self.auto_creator.enabled else None),
                            producer_ids=producer_ids, controller=controller,
                            transactions=transactions, txn_verifier=self._txn_verifier(),
                            offsets_marker_listener=groups,
                            authorization=self.authorization)
        if self.lifecycle_settings is not None and controller is not None:
            self.lifecycle = BrokerLifecycleManager(
                broker_identity(config, self.cluster_id), controller,
                lambda: self.image().offset, self.lifecycle_settings,
                clean_shutdown_dir=config.metadata_log_dir)
            self.lifecycle.on_session_change = replicas.set_session_lost
        else:
            self.metadata_caught_up = True
        network = self.network
        logs.failures.subscribe(lambda path: self._on_log_dir_failure(path, shutdown))
        remote_offsets = self._remote_offsets(replicas, groups)
        self.collector = BrokerCollector(replicas, logs, network, self.request_stats, groups,
                                         remote_offsets)
        if self.metadata is not None:
            self.metadata.add_publisher(self)
        # -- start, serve, stop in reverse -----------------------------------------------------
        try:
            async with AsyncExitStack() as stack:
                parts = _Parts(stack)
                # A forced end of the process (a second signal, an overrun stop) first
                # puts what was appended on disk.
                stack.callback(register_flush(logs.sync_for_exit))
                if self.metrics is not None:
                    self.metrics.register(self.collector)
                    stack.callback(self.metrics.unregister, self.collector)
                await parts.start(maintenance.run)
                if remote_offsets is not None:
                    await parts.start(remote_offsets.run)
                await parts.start(fetchers.run)
                if isr_changes is not None:
                    await parts.start(isr_changes.run)
                    await parts.start(replicas.run_isr_expiration,
                                      config.replica_lag_time_max_ms)
                await parts.start(self.auto_creator.run)
                await parts.start(groups.run)
                if transactions is not None:
                    await parts.start(transactions.run)
                if self.lifecycle is not None:
                    await parts.start(self.lifecycle.run)
                    if not await self._wait_caught_up(self.lifecycle, shutdown):
                        return
                    self._start_coordinators()
                async with trio.open_nursery() as serving:
                    self.addresses = await serving.start(network.serve)
                    logger.info("broker %d serving clients on %s", config.node_id,
                                ", ".join(listener.uri() for listener in self.listeners))
                    task_status.started(self.addresses)
                    await shutdown.wait()
                    if self.lifecycle is not None:
                        # Bounded by its share of raftka.shutdown.timeout.ms, so a stop never
                        # hangs when the quorum is gone.
                        await self.lifecycle.controlled_shutdown(
                            config.network_limits.controlled_shutdown_timeout_s)
                    # In-flight requests get the network's grace period to finish.
                    network.stop()
        finally:
            with trio.CancelScope(shield=True):
                await network.aclose()
                if self.broker_channels is not None:
                    await self.broker_channels.aclose()
                logs.close()
                logger.info("closed the partition logs")

    async def on_metadata(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """Act on a new image: replicas first (so a partition is led before the group
        coordinator loads it), then the group coordinator."""
        self.dynamic_config.on_metadata_update(delta, image)
        await self.replica_manager.on_metadata(delta, image)
        await self.group_coordinator.on_metadata(delta, image)
        if self.transaction_coordinator is not None:
            await self.transaction_coordinator.on_metadata(delta, image)

    def _start_coordinators(self) -> None:
        """The metadata is current: the coordinators load what this broker leads now."""
        self.metadata_caught_up = True
        image = self.image()
        self.replica_manager.delete_stray_logs()
        self.group_coordinator.reconcile(image)
        if self.transaction_coordinator is not None:
            self.transaction_coordinator.state.reconcile(image)

    def _on_log_dir_failure(self, path: Path, shutdown: trio.Event) -> None:
        """Report the failed dir in heartbeats; with no dir left online, shut down (the
        controlled shutdown moves this broker's leaderships away), as Kafka does."""
        offline = set(self.log_manager.failures.offline)
        if self.lifecycle is not None:
            self.lifecycle.offline_log_dirs = tuple(
                dir_id for directory, dir_id in log_dir_ids(self.config).items()
                if Path(directory).resolve() in offline)
            self.lifecycle.wake()
        if not self.log_manager.online_dirs:
            message = (f"broker {self.config.node_id}: every log directory is offline "
                       f"({', '.join(str(p) for p in sorted(offline))}); shutting down")
            logger.critical("%s", message)
            self.startup_error = NodeStartupError(message)
            shutdown.set()

    def _remote_offsets(self, replicas: ReplicaManager,
                        groups: GroupCoordinator) -> RemoteEndOffsets | None:
        """High watermarks of the partitions this broker's groups commit to but it holds no
        replica of (for their lag), read through its own inter-broker listener; None for a
        broker outside a cluster (no controller)."""
        if self.controller is None or self.metrics is None:
            return None
        config = self.config
        listener = next((l for l in config.advertised_listeners
                         if l.name == config.inter_broker_listener_name), None)
        if listener is None:
            return None

        def wanted() -> list[tuple[str, int]]:
            return [tp for group in groups.engine.groups.values() for tp in group.offsets
                    if replicas.get_partition(*tp) is None]

        return RemoteEndOffsets(wanted, admin_end_offsets(
            f"{listener.host}:{listener.port}", f"raftka-broker-{config.node_id}-lag",
            config.inter_broker_security, inter_broker_sasl(config)))

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
        create = self.create_internal_topic
        if create is None and self.controller is not None:
            create = channel_create_topic(self.controller)
        creator = InternalTopicCreator(offsets_topic_settings(config), create)
        log = ReplicaCoordinatorLog(replicas, CONSUMER_OFFSETS_TOPIC,
                                    config.offsets_commit_timeout_ms)
        return GroupCoordinator(config.node_id, GroupCoordinatorSettings.from_config(config), log,
                                image=self.image, topic_creator=creator,
                                caught_up=lambda: self.metadata_caught_up)

    def _transaction_coordinator(self, replicas: ReplicaManager,
                                 producer_ids: ProducerIdManager | None
                                 ) -> TransactionCoordinator | None:
        """The transaction coordinator (it needs producer ids, so a controller)."""
        if producer_ids is None:
            return None
        config = self.config
        create = self.create_internal_topic
        if create is None and self.controller is not None:
            create = channel_create_topic(self.controller)
        topic_settings = transaction_state_topic_settings(config)
        creator = InternalTopicCreator(topic_settings, create)
        log = ReplicaCoordinatorLog(replicas, TRANSACTION_STATE_TOPIC,
                                    config.offsets_commit_timeout_ms)
        state = TransactionStateManager(config.node_id, topic_settings.num_partitions, log,
                                        clock=wall_clock_ms,
                                        caught_up=lambda: self.metadata_caught_up,
                                        topic_creator=creator)
        self.broker_channels = channels = BrokerChannels(
            config.node_id, self.image, config.inter_broker_listener_name)
        coordinator = TransactionCoordinator(
            config.node_id, TransactionSettings.from_config(config), state,
            MarkerSender(channels, self.image), producer_ids, image=self.image)
        self.transaction_verifier = CoordinatorVerifier(config.node_id, coordinator, channels,
                                                        self.image)
        return coordinator

    def _txn_verifier(self) -> CoordinatorVerifier | None:
        """KIP-890's verification of transactional produce, unless
        `transaction.partition.verification.enable` turns it off."""
        if not self.config.transaction_partition_verification_enable:
            return None
        return self.transaction_verifier

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


def log_dir_ids(config: "ServerConfig") -> dict[str, uuid.UUID]:
    """Each log dir's `directory.id` from its meta.properties (written by storage format)."""
    ids = {}
    for directory in config.log_dirs:
        meta = read_meta_properties(directory) or {}
        if meta.get("directory.id"):
            ids[directory] = parse_uuid(meta["directory.id"])
    return ids


def broker_identity(config: "ServerConfig", cluster_id: str) -> BrokerIdentity:
    """The registration facts of this broker, with a fresh incarnation id."""
    dir_ids = list(log_dir_ids(config).values())
    listeners = tuple((l.name, l.host, l.port, l.security_protocol)
                      for l in config.advertised_listeners)
    return BrokerIdentity(config.node_id, cluster_id, listeners, rack=config.broker_rack,
                          log_dir_ids=tuple(dir_ids))
