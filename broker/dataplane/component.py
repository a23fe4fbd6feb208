"""The data plane as one broker component: ReplicaManager plus the data API handlers.

`node.py` builds it through `data_plane_component` (a `COMPONENT_FACTORIES` entry); tests
and other hosts use `DataPlane` directly with their own LogManager and router.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import trio

from broker.dataplane.auto_create import TopicAutoCreator
from broker.dataplane.configs import DescribeConfigsHandler
from broker.dataplane.fetch import FetchHandler
from broker.dataplane.groups import install_coordinator_unavailable
from broker.dataplane.maintenance import LogMaintenance
from broker.dataplane.offsets import OffsetHandlers
from broker.dataplane.produce import ProduceHandler
from broker.dataplane.producer_ids import (
    BlockSource,
    InitProducerIdHandler,
    ProducerIdManager,
    controller_block_source,
)
from broker.log.manager import LogManager
from broker.metrics import METRICS_FILE, MetricsRegistry, MetricsReporter
from broker.network.router import RequestRouter
from broker.replica.alter_partition import AlterPartitionManager
from broker.replica.manager import ReplicaManager
from broker.replica_fetcher import FetcherSettings, ReplicaFetcherManager
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage

if TYPE_CHECKING:
    from broker.config import ServerConfig
    from broker.node import BrokerRuntime

logger = logging.getLogger(__name__)


class DataPlane:
    """Partitions, Produce/Fetch/offsets/configs handlers, InitProducerId, auto-creation
    and the periodic log jobs of one broker.

    `channel` is the broker's ControllerChannel (None: no auto-creation, and producer ids
    only from `producer_id_source`); `broker_epoch` returns the current registration epoch.
    """

    def __init__(self, config: "ServerConfig", log_manager: LogManager, *,
                 channel: Any = None, broker_epoch: Callable[[], int] = lambda: -1,
                 image: Callable[[], MetadataImage] | None = None,
                 producer_id_source: BlockSource | None = None,
                 owns_log_manager: bool = False) -> None:
        self.config = config
        self.log_manager = log_manager
        self.replica_manager = ReplicaManager(config.node_id, log_manager, config.log_defaults())
        # Replication: followers fetch from leaders; leaders send ISR changes to the
        # controller (only with a channel to it).
        self.replica_fetchers = ReplicaFetcherManager(config.node_id, self.replica_manager,
                                                      FetcherSettings.from_config(config))
        self.alter_partition: AlterPartitionManager | None = None
        if channel is not None:
            replicas = self.replica_manager
            self.alter_partition = AlterPartitionManager(
                config.node_id, channel, broker_epoch, lambda: replicas.image,
                on_change=lambda partition: replicas.notify(partition.key))
            replicas.isr_sender = self.alter_partition
        self.replica_lag_time_max_ms = int(config.get("replica.lag.time.max.ms"))  # type: ignore[call-overload]
        self._image = image if image is not None else (lambda: self.replica_manager.image)
        if producer_id_source is None and channel is not None:
            producer_id_source = controller_block_source(channel, config.node_id, broker_epoch)
        self.producer_ids = (None if producer_id_source is None
                             else ProducerIdManager(producer_id_source))
        self.auto_creator = TopicAutoCreator(config, channel, self._image)
        self.maintenance = LogMaintenance(log_manager, config)
        self.metrics = MetricsRegistry()
        register_replica_gauges(self.metrics, self.replica_manager)
        self.metrics_reporter = MetricsReporter(
            self.metrics, log_manager.log_dirs[0] / METRICS_FILE,
            int(config.get("raftka.metrics.interval.ms")), config.node_id)  # type: ignore[call-overload]
        self._owns_log_manager = owns_log_manager

    def register(self, router: RequestRouter) -> None:
        """Install the data API handlers (group APIs answer COORDINATOR_NOT_AVAILABLE until a
        coordinator registers over them)."""
        ProduceHandler(self.replica_manager).register(router)
        FetchHandler(self.replica_manager).register(router)
        OffsetHandlers(self.replica_manager).register(router)
        DescribeConfigsHandler(self.config, self._image).register(router)
        install_coordinator_unavailable(router)
        if self.producer_ids is not None:
            InitProducerIdHandler(self.producer_ids).register(router)

    async def on_metadata(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """Trio-side metadata publisher: hand the update to the ReplicaManager."""
        self.replica_manager.on_metadata_update(delta, image)

    async def ensure_topics(self, names: Sequence[str]) -> Mapping[str, int]:
        """The Metadata handler's auto-create hook (`broker.handlers.AutoCreateTopics`)."""
        return await self.auto_creator.ensure_topics(names)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Background work (auto-creation, log jobs, metrics, replica fetchers, ISR changes)
        until cancelled; then close the logs if this component owns them."""
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self.auto_creator.run)
                await nursery.start(self.maintenance.run)
                await nursery.start(self.metrics_reporter.run)
                await nursery.start(self.replica_fetchers.run)
                if self.alter_partition is not None:
                    await nursery.start(self.alter_partition.run)
                    await nursery.start(self.replica_manager.run_isr_expiration,
                                        self.replica_lag_time_max_ms)
                task_status.started()
                await trio.sleep_forever()
        finally:
            if self._owns_log_manager:
                with trio.CancelScope(shield=True):
                    self.log_manager.close()
                    logger.info("closed the partition logs")


def register_replica_gauges(registry: MetricsRegistry, replicas: ReplicaManager) -> None:
    """The ReplicaManager's gauges under Kafka's names (kafka.server:type=ReplicaManager,
    plus the controller's OfflinePartitionsCount as this broker's image shows it)."""
    registry.gauge("UnderReplicatedPartitions", lambda: replicas.under_replicated_partitions)
    registry.gauge("UnderMinIsrPartitionCount", lambda: replicas.under_min_isr_partitions)
    registry.gauge("LeaderCount", lambda: replicas.leader_count)
    registry.gauge("PartitionCount", lambda: replicas.partition_count)
    registry.gauge("OfflinePartitionsCount", lambda: replicas.offline_partitions)


def data_plane_component(runtime: "BrokerRuntime") -> DataPlane:
    """`broker.node.COMPONENT_FACTORIES` entry: the data plane over `log.dirs`, with
    producer ids and auto-creation through the runtime's controller channel."""
    config = runtime.config
    log_manager = LogManager(config.log_dirs, config.log_defaults())
    lifecycle = runtime.lifecycle
    plane = DataPlane(config, log_manager, channel=runtime.channel,
                      broker_epoch=lambda: lifecycle.broker_epoch,
                      image=lambda: runtime.bridge.image, owns_log_manager=True)
    runtime.auto_create_topics = plane.ensure_topics
    return plane
