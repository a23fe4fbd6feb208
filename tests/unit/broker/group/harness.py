"""One in-process broker on a real socket: the real BrokerServer (ReplicaManager, partition
logs, request layer, group coordinator), with metadata replayed from the records a
controller would commit. `__consumer_offsets` is created, when a FindCoordinator
asks for it, by publishing its records here instead of through a controller.
"""

from __future__ import annotations

import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Mapping

import trio

from broker.config import ServerConfig
from broker.config.endpoints import Listener
from broker.server import BrokerServer
from clients.net import KafkaConnection
from clients.protocol import ErrorCode
from metadata.delta import apply_records
from metadata.image import MetadataImage
from metadata.records import (
    TOPIC_RESOURCE,
    BrokerEndpoint,
    ConfigRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)

BROKER_ID = 1
FAST_GROUPS = {"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "500",
               "offsets.topic.num.partitions": "4", "offsets.topic.replication.factor": "1"}


@dataclass
class GroupBroker:
    """A running broker plus helpers to change its metadata."""

    server: BrokerServer
    host: str
    port: int
    image: MetadataImage = field(default_factory=MetadataImage.empty)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)

    @property
    def coordinator(self):  # type: ignore[no-untyped-def]
        return self.server.group_coordinator

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    async def publish(self, records: list[Any]) -> None:
        delta, self.image = apply_records(self.image, records)
        await self.server.on_metadata(delta, self.image)

    def topic_records(self, name: str, partitions: int = 1,
                      configs: Mapping[str, str] | None = None) -> list[Any]:
        """The records of a new topic led by this broker (under a fresh id, remembered in
        `topic_ids`), not yet published: a test may hand them to one listener only."""
        topic_id = uuid.uuid4()
        self.topic_ids[name] = topic_id
        records: list[Any] = [TopicRecord(name=name, topic_id=topic_id)]
        records += [ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name=name, name=k,
                                 value=v) for k, v in (configs or {}).items()]
        records += [PartitionRecord(partition_id=p, topic_id=topic_id, replicas=(BROKER_ID,),
                                    isr=(BROKER_ID,), leader=BROKER_ID, leader_epoch=0,
                                    partition_epoch=0) for p in range(partitions)]
        return records

    async def create_topic(self, name: str, partitions: int = 1,
                           configs: Mapping[str, str] | None = None) -> None:
        await self.publish(self.topic_records(name, partitions, configs))

    async def move_leader(self, name: str, partition: int, leader: int) -> None:
        await self.publish([PartitionChangeRecord(partition_id=partition,
                                                  topic_id=self.topic_ids[name], leader=leader)])

    async def connect(self) -> KafkaConnection:
        return await KafkaConnection.connect(self.host, self.port, client_id="group-test")

    async def wait_loaded(self, timeout: float = 5.0) -> None:
        """Until every `__consumer_offsets` partition this broker leads is loaded."""
        with trio.fail_after(timeout):
            while self.coordinator.is_loading or not self.coordinator.runtime.loaded:
                await trio.sleep(0.01)


@asynccontextmanager
async def running_group_broker(tmp_path: Path, extra: Mapping[str, str] | None = None,
                               ) -> AsyncIterator[GroupBroker]:
    """Serve on 127.0.0.1 (port 0) until the block ends."""
    log_dir = tmp_path / "logs"
    log_dir.mkdir(exist_ok=True)
    props = {"process.roles": "broker", "node.id": str(BROKER_ID),
             "controller.quorum.voters": "9@127.0.0.1:1",
             "listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(log_dir), **FAST_GROUPS,
             **(extra or {})}
    config = ServerConfig(props)
    holder: list[GroupBroker] = []

    async def create_internal_topic(topic: dict[str, Any]) -> tuple[int, str | None]:
        broker = holder[0]
        await broker.create_topic(topic["name"], topic["num_partitions"],
                                  {c["name"]: c["value"] for c in topic["configs"]})
        return ErrorCode.NONE, None

    server = BrokerServer(config, "group-test-cluster",
                          lambda: holder[0].image if holder else MetadataImage.empty(),
                          create_internal_topic=create_internal_topic)
    shutdown = trio.Event()
    async with trio.open_nursery() as nursery:
        addresses = await nursery.start(server.run, shutdown)
        host, port = addresses["PLAINTEXT"]
        broker = GroupBroker(server, host, port)
        holder.append(broker)
        await broker.publish([RegisterBrokerRecord(
            broker_id=BROKER_ID, incarnation_id=uuid.uuid4(), broker_epoch=1,
            end_points=(BrokerEndpoint("PLAINTEXT", host, port, 0),), fenced=False)])
        yield broker
        shutdown.set()
