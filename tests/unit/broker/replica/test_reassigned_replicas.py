"""The replica manager under a reassignment: a broker added to a partition's replicas
follows it, a broker removed stops and deletes the partition's directory, and a leader
counts added replicas for ISR expansion."""

from __future__ import annotations

import uuid

import pytest

from broker.log.manager import LogManager
from broker.replica import ReplicaManager
from metadata.delta import apply_records
from metadata.image import MetadataImage
from metadata.records import PartitionChangeRecord, RegisterBrokerRecord
from tests.unit.broker.log.helpers import batch
from tests.unit.broker.replica.test_replica_manager import BROKER, Cluster


@pytest.fixture
def cluster(tmp_path):  # type: ignore[no-untyped-def]
    c = Cluster(tmp_path)
    c.publish([RegisterBrokerRecord(broker_id=3, incarnation_id=uuid.uuid4(),
                                    broker_epoch=3, fenced=False)])
    yield c
    c.logs.close()


def test_a_broker_added_to_the_replicas_becomes_a_follower(cluster):
    topic_id = cluster.topic("t", leader=2, replicas=(2, 3))
    assert cluster.replicas.get_partition("t", 0) is None
    cluster.publish([PartitionChangeRecord(partition_id=0, topic_id=topic_id,
                                           replicas=(2, BROKER, 3), adding_replicas=(BROKER,),
                                           removing_replicas=(3,))])
    partition = cluster.replicas.get_partition("t", 0)
    assert partition is not None and not partition.is_leader and partition.leader_id == 2
    assert cluster.followed[-1][0] == [partition]
    assert cluster.logs.log_dir_of("t", 0) is not None


def test_a_broker_removed_from_the_replicas_stops_and_deletes_its_directory(cluster):
    topic_id = cluster.topic("t", leader=2, replicas=(2, BROKER))
    directory = cluster.replicas.get_partition("t", 0).log.directory
    assert directory.exists()
    cluster.publish([PartitionChangeRecord(partition_id=0, topic_id=topic_id, replicas=(2, 3),
                                           isr=(2, 3))])
    assert cluster.replicas.get_partition("t", 0) is None
    assert cluster.followed[-1][1] == [("t", 0)]
    assert not directory.exists()
    assert cluster.logs.get_log("t", 0) is None


def test_the_leader_counts_an_added_replica_for_isr_expansion(cluster):
    topic_id = cluster.topic("t", leader=BROKER, replicas=(BROKER, 2))
    partition = cluster.replicas.leader_partition("t", 0)
    partition.append_as_leader(batch([b"a", b"b"]), 1)
    cluster.publish([PartitionChangeRecord(partition_id=0, topic_id=topic_id,
                                           replicas=(BROKER, 2, 3), adding_replicas=(3,))])
    assert partition.is_leader and 3 in partition.followers
    partition.record_follower_fetch(2, 2)
    partition.record_follower_fetch(3, 2)
    assert partition.isr_expansion(3) == (BROKER, 2, 3)


def test_a_stray_log_left_from_before_a_restart_is_deleted(cluster, tmp_path):
    moved = cluster.topic("t", leader=2, replicas=(2, BROKER))
    cluster.topic("kept", leader=BROKER, replicas=(BROKER,))
    moved_dir = cluster.replicas.get_partition("t", 0).log.directory
    kept_dir = cluster.replicas.get_partition("kept", 0).log.directory
    cluster.logs.close()
    # Moved away while this broker was down; it restarts and replays the metadata.
    cluster.publish([PartitionChangeRecord(partition_id=0, topic_id=moved, replicas=(2, 3),
                                           isr=(2, 3))], deliver=False)
    logs = LogManager([tmp_path / "logs"])
    try:
        restarted = ReplicaManager(BROKER, logs)
        delta, image = apply_records(MetadataImage.empty(), cluster.image.to_records())
        restarted.on_metadata_update(delta, image)
        assert logs.get_log("t", 0) is not None  # loaded from disk, not yet judged
        assert restarted.delete_stray_logs() == [("t", 0)]
        assert not moved_dir.exists() and kept_dir.exists()
    finally:
        logs.close()
    cluster.logs = LogManager([tmp_path / "other"])
