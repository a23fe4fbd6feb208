"""MetadataDelta replay, the next image, and the change views brokers diff on."""

from __future__ import annotations

import uuid
from types import MappingProxyType

import pytest

from metadata.delta import MetadataDelta, apply_records
from metadata.errors import MetadataReplayError
from metadata.image import MetadataImage
from metadata.records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)

T1 = uuid.UUID(int=1, version=4)
T2 = uuid.UUID(int=2, version=4)


def broker(bid: int, epoch: int = 10) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(broker_id=bid, incarnation_id=uuid.UUID(int=bid, version=4), broker_epoch=epoch)


def partition(tid: uuid.UUID, pid: int, replicas: tuple[int, ...], leader: int | None = None) -> PartitionRecord:
    return PartitionRecord(
        partition_id=pid, topic_id=tid, replicas=replicas, isr=replicas,
        leader=replicas[0] if leader is None else leader, leader_epoch=0, partition_epoch=0,
    )


@pytest.fixture
def base() -> MetadataImage:
    _, image = apply_records(
        MetadataImage.empty(),
        [
            broker(1), broker(2), broker(3),
            UnfenceBrokerRecord(id=1, epoch=10), UnfenceBrokerRecord(id=2, epoch=10),
            TopicRecord(name="a", topic_id=T1),
            partition(T1, 0, (1, 2)),
            partition(T1, 1, (2, 3)),
            ConfigRecord(resource_type=2, resource_name="a", name="retention.ms", value="5"),
        ],
    )
    return image


def test_replay_builds_image_with_offset_and_epoch(base: MetadataImage) -> None:
    assert base.offset == 8
    assert sorted(base.brokers) == [1, 2, 3]
    assert base.brokers[3].fenced and not base.brokers[1].fenced
    topic = base.topic("a")
    assert topic is not None and topic.topic_id == T1 and base.topic_by_id(T1) is topic
    assert base.partition(T1, 1).replicas == (2, 3)
    assert base.topic_config("a") == {"retention.ms": "5"}
    delta = MetadataDelta(base)
    delta.replay(NoOpRecord(), 20, epoch=4)
    image = delta.apply()
    assert (image.offset, image.epoch) == (20, 4)


def test_image_is_immutable(base: MetadataImage) -> None:
    assert isinstance(base.brokers, MappingProxyType)
    with pytest.raises(TypeError):
        base.brokers[9] = base.brokers[1]  # type: ignore[index]
    with pytest.raises(AttributeError):
        base.offset = 3  # type: ignore[misc]


def test_image_apply_gives_the_next_image_and_refuses_a_foreign_delta(base: MetadataImage) -> None:
    delta = MetadataDelta(base)
    delta.replay(TopicRecord(name="b", topic_id=T2), 9, epoch=2)
    delta.replay(partition(T2, 0, (3, 1)), 10)
    image = base.apply(delta)
    assert image == delta.apply()
    assert (image.offset, image.epoch) == (10, 2)
    assert image.topic("b") is not None and image.partition(T2, 0).leader == 3
    assert base.topic("b") is None
    # A delta built on another image (even an equal one) describes another history.
    with pytest.raises(MetadataReplayError, match="offset 8"):
        image.apply(delta)
    with pytest.raises(MetadataReplayError):
        MetadataImage.empty().apply(MetadataDelta(MetadataImage.empty()))


def test_partition_change_bumps_epochs_only_as_kafka_does(base: MetadataImage) -> None:
    _, image = apply_records(base, [PartitionChangeRecord(partition_id=0, topic_id=T1, isr=(1,))])
    part = image.partition(T1, 0)
    assert (part.isr, part.leader, part.leader_epoch, part.partition_epoch) == ((1,), 1, 0, 1)
    _, image = apply_records(image, [PartitionChangeRecord(partition_id=0, topic_id=T1, leader=2, isr=(2,))])
    part = image.partition(T1, 0)
    assert (part.isr, part.leader, part.leader_epoch, part.partition_epoch) == ((2,), 2, 1, 2)
    # The base image is untouched.
    assert base.partition(T1, 0).isr == (1, 2)


def test_delta_reports_created_deleted_and_changed(base: MetadataImage) -> None:
    delta = MetadataDelta(base)
    for offset, record in enumerate(
        [
            TopicRecord(name="b", topic_id=T2),
            partition(T2, 0, (3, 1)),
            PartitionChangeRecord(partition_id=1, topic_id=T1, leader=3),
            FenceBrokerRecord(id=2, epoch=10),
        ],
        start=100,
    ):
        delta.replay(record, offset)
    assert delta.created_topics() == {T2: "b"}
    changes = {(c.topic_name, c.partition_id): c for c in delta.changed_partitions()}
    assert changes[("b", 0)].previous is None
    assert changes[("a", 1)].previous.leader == 2 and changes[("a", 1)].current.leader == 3
    prev, cur = delta.changed_brokers()[2]
    assert prev is not None and not prev.fenced and cur is not None and cur.fenced

    local = delta.local_changes(3)
    assert {(c.topic_name, c.partition_id) for c in local.leaders} == {("a", 1), ("b", 0)}
    local1 = delta.local_changes(1)
    assert [(c.topic_name, c.partition_id) for c in local1.followers] == [("b", 0)]


def test_topic_deletion_reports_deletes_and_drops_configs(base: MetadataImage) -> None:
    delta, image = apply_records(base, [RemoveTopicRecord(topic_id=T1)])
    assert set(delta.deleted_topics()) == {T1}
    assert image.topic("a") is None and image.topic_by_id(T1) is None
    assert image.topic_config("a") == {}
    deletes = delta.local_changes(2).deletes
    assert {(d.topic_name, d.partition_id) for d in deletes} == {("a", 0), ("a", 1)}
    # The name is free again, under a new id, even within one delta.
    _, image2 = apply_records(base, [RemoveTopicRecord(topic_id=T1), TopicRecord(name="a", topic_id=T2)])
    assert image2.topic("a").topic_id == T2 and image2.topic("a").partitions == {}


def test_replica_removed_from_assignment_is_a_local_delete(base: MetadataImage) -> None:
    delta, _ = apply_records(base, [PartitionChangeRecord(partition_id=1, topic_id=T1, replicas=(2,), isr=(2,))])
    assert [(d.topic_name, d.partition_id) for d in delta.local_changes(3).deletes] == [("a", 1)]


def test_topic_created_and_deleted_in_one_delta_leaves_no_trace(base: MetadataImage) -> None:
    delta, image = apply_records(base, [TopicRecord(name="b", topic_id=T2), partition(T2, 0, (1,)), RemoveTopicRecord(topic_id=T2)])
    assert delta.created_topics() == {} and delta.deleted_topics() == {}
    assert image == apply_records(base, [NoOpRecord(), NoOpRecord(), NoOpRecord()])[1]


def test_broker_state_records(base: MetadataImage) -> None:
    _, image = apply_records(
        base,
        [
            BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10, in_controlled_shutdown=1),
            BrokerRegistrationChangeRecord(broker_id=3, broker_epoch=10, fenced=-1),
            UnregisterBrokerRecord(broker_id=2, broker_epoch=10),
        ],
    )
    assert image.brokers[1].in_controlled_shutdown and not image.brokers[1].is_active
    assert not image.brokers[3].fenced
    assert 2 not in image.brokers
    # Re-registration replaces the whole registration (controlled shutdown cleared, fenced).
    _, image = apply_records(image, [broker(1, epoch=30)])
    assert image.brokers[1].epoch == 30 and image.brokers[1].fenced and not image.brokers[1].in_controlled_shutdown


def test_configs_features_and_producer_ids(base: MetadataImage) -> None:
    _, image = apply_records(
        base,
        [
            ConfigRecord(resource_type=2, resource_name="a", name="retention.ms", value=None),
            ConfigRecord(resource_type=4, resource_name="", name="log.retention.ms", value="9"),
            FeatureLevelRecord(name="metadata.version", feature_level=7),
            ProducerIdsRecord(broker_id=1, broker_epoch=10, next_producer_id=1000),
        ],
    )
    assert (2, "a") not in image.configs
    assert image.broker_config() == {"log.retention.ms": "9"}
    assert image.features == {"metadata.version": 7}
    assert image.next_producer_id == 1000
    _, image = apply_records(image, [FeatureLevelRecord(name="metadata.version", feature_level=0)])
    assert image.features == {}


@pytest.mark.parametrize(
    "record",
    [
        PartitionRecord(partition_id=0, topic_id=T2, replicas=(1,), isr=(1,)),
        PartitionChangeRecord(partition_id=7, topic_id=T1, leader=1),
        RemoveTopicRecord(topic_id=T2),
        TopicRecord(name="a", topic_id=T2),
        TopicRecord(name="other", topic_id=T1),
        FenceBrokerRecord(id=9, epoch=10),
        FenceBrokerRecord(id=1, epoch=11),
        UnregisterBrokerRecord(broker_id=1, broker_epoch=3),
    ],
    ids=lambda r: type(r).__name__,
)
def test_inconsistent_record_is_rejected_without_changing_the_delta(base: MetadataImage, record: object) -> None:
    delta = MetadataDelta(base)
    with pytest.raises(MetadataReplayError):
        delta.replay(record, 50)  # type: ignore[arg-type]
    assert delta.apply() == base


def test_tracker_learns_registration_offsets_as_publisher(base: MetadataImage) -> None:
    from metadata.heartbeats import BrokerHeartbeatTracker
    from metadata.publisher import MetadataPublisher

    tracker = BrokerHeartbeatTracker()
    assert isinstance(tracker, MetadataPublisher)
    delta = MetadataDelta(base)
    delta.replay(broker(4, epoch=40), 41)
    tracker.on_metadata_update(delta, delta.apply())
    assert tracker.registration_offset(4) == 41
