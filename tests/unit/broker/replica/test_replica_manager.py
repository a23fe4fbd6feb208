"""ReplicaManager driven by metadata deltas on real partition logs."""

from __future__ import annotations

import uuid

import pytest

from broker.log.manager import LogManager
from broker.replica import NotLeaderOrFollower, ReplicaManager, UnknownTopicOrPartition
from metadata.delta import apply_records
from metadata.image import MetadataImage
from metadata.records import (
    TOPIC_RESOURCE,
    ConfigRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from tests.unit.broker.log.helpers import batch

BROKER = 1


class Cluster:
    def __init__(self, tmp_path) -> None:  # type: ignore[no-untyped-def]
        self.logs = LogManager([tmp_path / "logs"])
        self.replicas = ReplicaManager(BROKER, self.logs)
        self.image = MetadataImage.empty()
        self.followed: list[tuple[list, list]] = []
        self.replicas.add_follower_listener(lambda f, s: self.followed.append((list(f), list(s))))
        self.publish([RegisterBrokerRecord(broker_id=b, incarnation_id=uuid.uuid4(), broker_epoch=b,
                                           fenced=False) for b in (1, 2)])

    def publish(self, records, *, deliver: bool = True) -> None:  # type: ignore[no-untyped-def]
        delta, self.image = apply_records(self.image, records)
        if deliver:
            self.replicas.on_metadata_update(delta, self.image)

    def topic(self, name: str, *, leader: int = BROKER, replicas=(BROKER,), deliver: bool = True,
              configs: dict[str, str] | None = None) -> uuid.UUID:
        topic_id = uuid.uuid4()
        self.publish([TopicRecord(name=name, topic_id=topic_id),
                      *[ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name=name, name=k, value=v)
                        for k, v in (configs or {}).items()],
                      PartitionRecord(partition_id=0, topic_id=topic_id, replicas=tuple(replicas),
                                      isr=tuple(replicas), leader=leader, leader_epoch=0,
                                      partition_epoch=0)], deliver=deliver)
        return topic_id


@pytest.fixture
def cluster(tmp_path):  # type: ignore[no-untyped-def]
    c = Cluster(tmp_path)
    yield c
    c.logs.close()


def test_leader_gets_a_log_and_an_epoch_entry(cluster):
    cluster.topic("t")
    partition = cluster.replicas.leader_partition("t", 0)
    assert partition.is_leader and partition.leader_epoch == 0
    assert partition.log.epoch_cache.entries == [(0, 0)]
    partition.append_as_leader(batch([b"a", b"b"]), 1)
    assert partition.high_watermark == 2


def test_new_epoch_starts_at_the_log_end(cluster):
    topic_id = cluster.topic("t")
    partition = cluster.replicas.leader_partition("t", 0)
    partition.append_as_leader(batch([b"a", b"b"]), 1)
    cluster.publish([PartitionChangeRecord(partition_id=0, topic_id=topic_id, leader=BROKER)])
    assert partition.leader_epoch == 1
    assert partition.log.epoch_cache.entries == [(0, 0), (1, 2)]


def test_follower_is_recorded_and_reported_to_the_fetcher_seam(cluster):
    cluster.topic("f", leader=2, replicas=(2, BROKER))
    local = cluster.replicas.get_partition("f", 0)
    assert local is not None and not local.is_leader and local.leader_id == 2
    assert [p.key for p in cluster.followed[-1][0]] == [("f", 0)]
    with pytest.raises(NotLeaderOrFollower):
        cluster.replicas.leader_partition("f", 0)
    with pytest.raises(UnknownTopicOrPartition):
        cluster.replicas.leader_partition("nothing", 0)


def test_deleted_topic_loses_its_directory(cluster):
    topic_id = cluster.topic("t")
    directory = cluster.logs.get_log("t", 0).directory
    assert directory.is_dir()
    cluster.publish([RemoveTopicRecord(topic_id=topic_id)])
    assert cluster.replicas.get_partition("t", 0) is None
    assert cluster.logs.get_log("t", 0) is None
    assert not directory.exists()


def test_config_change_reaches_the_log_and_min_isr(cluster):
    cluster.topic("t")
    cluster.publish([ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name="t",
                                  name="max.message.bytes", value="1234"),
                     ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name="t",
                                  name="min.insync.replicas", value="2")])
    partition = cluster.replicas.leader_partition("t", 0)
    assert partition.log.config.max_message_bytes == 1234
    assert partition.min_insync_replicas == 2


def test_missed_updates_are_reconciled_from_the_full_image(cluster):
    cluster.topic("early", deliver=False)
    cluster.topic("late")
    assert cluster.replicas.get_partition("early", 0) is not None
    assert cluster.replicas.get_partition("late", 0) is not None


def test_recreated_topic_replaces_a_stale_log(cluster):
    old_id = cluster.topic("t")
    cluster.replicas.leader_partition("t", 0).append_as_leader(batch([b"old"]), 1)
    cluster.publish([RemoveTopicRecord(topic_id=old_id)])
    new_id = cluster.topic("t")
    partition = cluster.replicas.leader_partition("t", 0)
    assert partition.topic_id == new_id and partition.log.log_end_offset == 0


def test_gauges_count_led_partitions_whose_isr_is_smaller_than_their_replicas(cluster):
    led = cluster.topic("led", replicas=(BROKER, 2), configs={"min.insync.replicas": "2"})
    followed = cluster.topic("followed", leader=2, replicas=(2, BROKER))
    replicas = cluster.replicas
    assert (replicas.under_replicated_partitions, replicas.under_min_isr_partitions) == (0, 0)
    assert (replicas.leader_count, replicas.partition_count) == (1, 2)
    # Both ISRs lose a member; only the partition led here is this broker's to report.
    cluster.publish([PartitionChangeRecord(partition_id=0, topic_id=led, isr=(BROKER,)),
                     PartitionChangeRecord(partition_id=0, topic_id=followed, isr=(2,))])
    assert replicas.under_replicated_partitions == 1
    assert replicas.under_min_isr_partitions == 1
    assert replicas.offline_partitions == 0
    cluster.publish([PartitionChangeRecord(partition_id=0, topic_id=followed, leader=-1)])
    assert replicas.offline_partitions == 1
    cluster.publish([PartitionChangeRecord(partition_id=0, topic_id=led, isr=(BROKER, 2))])
    assert (replicas.under_replicated_partitions, replicas.under_min_isr_partitions) == (0, 0)
