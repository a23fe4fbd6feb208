"""An in-process broker on a real socket, with metadata built from records.

The BrokerServer and all its parts (ReplicaManager, LogManager, request layer, network) are
the real ones, without a controller unless the test gives one; the metadata image is
replayed from the same records the controller would commit.
"""

from __future__ import annotations

import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Mapping

import trio

from broker.replica.manager import appended_key
from broker.config import ServerConfig
from broker.config.endpoints import Listener
from broker.apis.request import Authorizer
from broker.producer_id_manager import BlockSource
from broker.server import BrokerServer
from clients.net import KafkaConnection
from metadata.delta import apply_records
from metadata.image import MetadataImage
from metadata.records import (
    TOPIC_RESOURCE,
    BrokerEndpoint,
    ConfigRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
)

BROKER_ID = 1


def broker_config(log_dir: Path, extra: Mapping[str, str] | None = None) -> ServerConfig:
    props = {"process.roles": "broker", "node.id": str(BROKER_ID),
             "controller.quorum.voters": "9@127.0.0.1:1", "listeners": "PLAINTEXT://127.0.0.1:0",
             "log.dirs": str(log_dir)}
    props.update(extra or {})
    return ServerConfig(props)


@dataclass
class Broker:
    """A running broker plus helpers to change its metadata."""

    server: BrokerServer
    host: str
    port: int
    image: MetadataImage
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)

    def publish(self, records: list[Any]) -> None:
        delta, self.image = apply_records(self.image, records)
        self.server.replica_manager.on_metadata_update(delta, self.image)

    def create_topic(self, name: str, partitions: int = 1, *, replicas: tuple[int, ...] = (BROKER_ID,),
                     leader: int = BROKER_ID, configs: Mapping[str, str] | None = None) -> uuid.UUID:
        topic_id = uuid.uuid4()
        self.topic_ids[name] = topic_id
        records: list[Any] = [TopicRecord(name=name, topic_id=topic_id)]
        records += [ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name=name, name=k, value=v)
                    for k, v in (configs or {}).items()]
        records += [PartitionRecord(partition_id=p, topic_id=topic_id, replicas=replicas,
                                    isr=replicas, leader=leader, leader_epoch=0, partition_epoch=0)
                    for p in range(partitions)]
        self.publish(records)
        return topic_id

    def change_leader(self, name: str, partition: int, leader: int) -> None:
        self.publish([PartitionChangeRecord(partition_id=partition, topic_id=self.topic_ids[name],
                                            leader=leader)])

    def delete_topic(self, name: str) -> None:
        self.publish([RemoveTopicRecord(topic_id=self.topic_ids.pop(name))])

    def set_topic_config(self, name: str, key: str, value: str | None) -> None:
        self.publish([ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name=name, name=key,
                                   value=value)])

    async def wait_until(self, predicate: Any, topic: str, partition: int = 0,
                         timeout: float = 5.0) -> None:
        """Wait (woken by the partition's notifications, appends included) until
        `predicate()` holds."""
        purgatory = self.server.replica_manager.purgatory
        keys = [(topic, partition), appended_key((topic, partition))]
        with trio.fail_after(timeout), purgatory.watch(keys) as waiter:
            while not predicate():
                await waiter.wait()

    async def connect(self) -> KafkaConnection:
        return await KafkaConnection.connect(self.host, self.port, client_id="dataplane-test")

    def log(self, name: str, partition: int = 0):  # type: ignore[no-untyped-def]
        return self.server.log_manager.get_log(name, partition)


@asynccontextmanager
async def running_broker(tmp_path: Path, *, extra: Mapping[str, str] | None = None,
                         producer_id_source: BlockSource | None = None,
                         other_brokers: tuple[int, ...] = (2,),
                         channel: Any = None,
                         authorizer: Authorizer | None = None) -> AsyncIterator[Broker]:
    """Serve the broker on 127.0.0.1 (port 0) until the block ends; Metadata answers from
    the test's image."""
    log_dir = tmp_path / "logs"
    log_dir.mkdir(exist_ok=True)
    config = broker_config(log_dir, extra)
    holder: list[Broker] = []
    server = BrokerServer(config, "dataplane-test-cluster",
                          lambda: holder[0].image if holder else MetadataImage.empty(),
                          controller=channel, producer_id_source=producer_id_source,
                          authorizer=authorizer)
    shutdown = trio.Event()
    async with trio.open_nursery() as nursery:
        addresses = await nursery.start(server.run, shutdown)
        host, port = addresses["PLAINTEXT"]
        broker = Broker(server, host, port, MetadataImage.empty())
        holder.append(broker)
        broker.publish([
            RegisterBrokerRecord(broker_id=b, incarnation_id=uuid.uuid4(), broker_epoch=b,
                                 end_points=(BrokerEndpoint("PLAINTEXT", host, port, 0),),
                                 fenced=False)
            for b in (BROKER_ID, *other_brokers)])
        yield broker
        shutdown.set()


def counting_producer_ids(block_size: int = 1000) -> BlockSource:
    """Consecutive producer id blocks, as the controller's allocator hands them out."""
    next_start = [0]

    async def allocate() -> tuple[int, int]:
        start = next_start[0]
        next_start[0] += block_size
        return start, block_size

    return allocate
