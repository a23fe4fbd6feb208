"""Leader election details: preferred leader rebalance, unclean recovery, builder rules."""

from __future__ import annotations

import uuid

import pytest

from clients.protocol import ApiKey, as_message
from metadata.controller.alter_partition import alter_partition
from metadata.controller.brokers import fence_expired_brokers
from metadata.election import build_partition_change, leaderships, preferred_leader_changes
from metadata.image import PartitionRegistration
from metadata.records import BrokerRegistrationChangeRecord, PartitionChangeRecord
from metadata.settings import ControllerSettings
from tests.unit.metadata.controller.harness import Cluster


def two_partition_cluster() -> tuple[Cluster, uuid.UUID]:
    c = Cluster()
    c.add_brokers(1, 2, 3)
    c.create_topic("t", assignments=[
        {"partition_index": 0, "broker_ids": [1, 2]},
        {"partition_index": 1, "broker_ids": [2, 3]},
    ], num_partitions=-1, replication_factor=-1)
    return c, c.image.topic("t").topic_id


def test_preferred_leader_election_after_broker_returns() -> None:
    c, tid = two_partition_cluster()
    assert preferred_leader_changes(c.image) == []
    c.heartbeat(1, want_fence=True)
    assert c.image.partition(tid, 0).leader == 2
    c.heartbeat(1)  # unfenced again, but not yet back in the ISR
    assert preferred_leader_changes(c.image) == []
    c.commit([PartitionChangeRecord(partition_id=0, topic_id=tid, isr=(2, 1))])
    changes = preferred_leader_changes(c.image)
    assert changes == [PartitionChangeRecord(partition_id=0, topic_id=tid, leader=1)]
    c.commit(changes)
    part = c.image.partition(tid, 0)
    assert part.leader == 1 and part.leader_epoch == 2
    assert leaderships(c.image, 1) == 1


def test_preferred_leader_skips_replica_in_controlled_shutdown() -> None:
    c, tid = two_partition_cluster()
    c.commit([PartitionChangeRecord(partition_id=0, topic_id=tid, leader=2)])
    c.commit([BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=c.image.broker(1).epoch, in_controlled_shutdown=1)])
    assert preferred_leader_changes(c.image) == []


def test_unclean_leader_recovers_through_alter_partition() -> None:
    c = Cluster(settings=ControllerSettings(unclean_leader_election_enable=True))
    c.add_brokers(1, 2)
    c.create_topic("t", assignments=[{"partition_index": 0, "broker_ids": [1, 2]}], num_partitions=-1, replication_factor=-1)
    tid = c.image.topic("t").topic_id
    c.commit([PartitionChangeRecord(partition_id=0, topic_id=tid, isr=(1,))])
    c.now_ms += 9000
    c.heartbeat(2)
    c.commit(fence_expired_brokers(c.image, c.tracker, c.now_ms, c.settings))
    part = c.image.partition(tid, 0)
    assert (part.leader, part.isr, part.leader_recovery_state) == (2, (2,), 1)
    req = {
        "broker_id": 2, "broker_epoch": c.image.broker(2).epoch,
        "topics": [{"topic_id": tid, "partitions": [{
            "partition_index": 0, "leader_epoch": part.leader_epoch, "new_isr_with_epochs": [{"broker_id": 2, "broker_epoch": -1}],
            "leader_recovery_state": 0, "partition_epoch": part.partition_epoch,
        }]}],
    }
    records, response = alter_partition(c.image, as_message(ApiKey.ALTER_PARTITION, 3, req), c.now_ms)
    assert response.topics[0].partitions[0].leader_recovery_state == 0
    c.commit(records)
    assert c.image.partition(tid, 0).leader_recovery_state == 0


def test_builder_keeps_current_leader_while_eligible_and_returns_none_without_change() -> None:
    tid = uuid.uuid4()
    part = PartitionRegistration(replicas=(1, 2, 3), isr=(1, 2, 3), leader=2)
    assert build_partition_change(tid, 0, part, eligible=lambda b: True) is None
    change = build_partition_change(tid, 0, part, target_isr=(1, 2), eligible=lambda b: True)
    assert change == PartitionChangeRecord(partition_id=0, topic_id=tid, isr=(1, 2))
    change = build_partition_change(tid, 0, part, eligible=lambda b: b != 2)
    assert change is not None and change.leader == 1 and change.isr is None
    with pytest.raises(ValueError):
        build_partition_change(tid, 0, part, target_isr=(), eligible=lambda b: True)
