"""The group coordinator as a broker component (`broker.node.BrokerComponent`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import trio

from broker.group.coordinator import GroupCoordinator
from broker.group.handlers import GroupHandlers
from broker.group.model import GroupSettings
from broker.group.offsets_log import OffsetsLog, ReplicaOffsetsLog
from broker.group.offsets_topic import (
    CreateTopic,
    OffsetsTopicCreator,
    OffsetsTopicSettings,
    channel_create_topic,
)
from broker.network.router import RequestRouter
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage

if TYPE_CHECKING:
    from broker.node import BrokerRuntime


class GroupCoordinatorComponent:
    """Coordinator + handlers: `register` after the data plane's (so these handlers win over
    its COORDINATOR_NOT_AVAILABLE placeholders), publish metadata to it after the data
    plane (so the ReplicaManager leads a partition before it is loaded)."""

    def __init__(self, config: Any, log: OffsetsLog, image: Callable[[], MetadataImage], *,
                 create_topic: CreateTopic | None = None) -> None:
        settings = GroupSettings.from_config(config)
        creator = OffsetsTopicCreator(OffsetsTopicSettings.from_config(config), create_topic)
        self.coordinator = GroupCoordinator(config.node_id, settings, log, image=image,
                                            topic_creator=creator)
        self.handlers = GroupHandlers(self.coordinator, image)

    def register(self, router: RequestRouter) -> None:
        self.handlers.register(router)

    async def on_metadata(self, delta: MetadataDelta, image: MetadataImage) -> None:
        await self.coordinator.on_metadata(delta, image)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await self.coordinator.run(task_status=task_status)


def group_coordinator_component(runtime: "BrokerRuntime") -> GroupCoordinatorComponent:
    """`broker.node.COMPONENT_FACTORIES` entry; must come after the data plane's, whose
    ReplicaManager it writes `__consumer_offsets` through."""
    from broker.dataplane.component import DataPlane

    plane = next((c for c in runtime.components if isinstance(c, DataPlane)), None)
    if plane is None:
        raise RuntimeError("the group coordinator needs the data plane component before it")
    config = runtime.config
    log = ReplicaOffsetsLog(plane.replica_manager,
                            int(config.get("offsets.commit.timeout.ms")))  # type: ignore[call-overload]
    return GroupCoordinatorComponent(config, log, lambda: runtime.bridge.image,
                                     create_topic=channel_create_topic(runtime.channel))
