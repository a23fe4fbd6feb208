"""MetadataStateMachine: atomic batches, skipped bad batches, no-ops, publishers, snapshots."""

from __future__ import annotations

import logging
import uuid

import pytest

from kraft.metadata_state_machine import MetadataStateMachine
from kraft.state_machine import StateMachine
from metadata.delta import MetadataDelta
from metadata.errors import MetadataRecordError
from metadata.image import MetadataImage
from metadata.record_codec import encode_record
from metadata.records import (
    BrokerEndpoint,
    ConfigRecord,
    NoOpRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    TOPIC_RESOURCE,
)

TOPIC_ID = uuid.UUID(int=7, version=4)


def broker(broker_id: int, epoch: int) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(
        broker_id=broker_id, incarnation_id=uuid.UUID(int=broker_id, version=4), broker_epoch=epoch,
        end_points=(BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9000 + broker_id, 0),))


def topic_records(name: str = "orders", topic_id: uuid.UUID = TOPIC_ID) -> list:
    return [TopicRecord(name=name, topic_id=topic_id),
            PartitionRecord(partition_id=0, topic_id=topic_id, replicas=(1,), isr=(1,), leader=1,
                            leader_epoch=0, partition_epoch=0)]


def encoded(*records: object) -> list[bytes]:
    return [encode_record(r) for r in records]  # type: ignore[arg-type]


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[MetadataDelta, MetadataImage]] = []

    def on_metadata_update(self, delta: MetadataDelta, new_image: MetadataImage) -> None:
        self.calls.append((delta, new_image))


def test_implements_the_state_machine_protocol() -> None:
    assert isinstance(MetadataStateMachine(), StateMachine)
    assert MetadataStateMachine().applied_offset == -1


def test_batch_applies_every_record_and_advances_offset_and_epoch() -> None:
    sm = MetadataStateMachine()
    sm.apply_batch(encoded(broker(1, 1), *topic_records()), offset=5, epoch=2)
    image = sm.image
    assert (image.offset, image.epoch, sm.applied_offset) == (5, 2, 5)
    assert image.broker(1) is not None and image.broker(1).fenced
    assert image.topic("orders").partitions[0].leader == 1


def test_failed_batch_is_skipped_whole_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    sm = MetadataStateMachine()
    sm.apply_batch(encoded(broker(1, 1)), offset=2, epoch=1)
    before = sm.image
    # The topic record would replay; the unfence of an unknown broker cannot.
    bad = encoded(*topic_records(), UnfenceBrokerRecord(id=9, epoch=1))
    with caplog.at_level(logging.ERROR, logger="kraft.metadata_state_machine"):
        sm.apply_batch(bad, offset=3, epoch=1)
    assert sm.image.topic("orders") is None
    assert sm.image.brokers == before.brokers
    assert sm.applied_offset == 3 and sm.was_rejected(3) and not sm.was_rejected(2)
    assert any("offset 3" in r.getMessage() for r in caplog.records if r.levelno == logging.ERROR)


def test_undecodable_record_skips_the_batch() -> None:
    sm = MetadataStateMachine()
    sm.apply_batch(encoded(*topic_records()) + [b"\xc1garbage"], offset=4, epoch=1)
    assert sm.image.topic("orders") is None
    assert sm.applied_offset == 4 and sm.was_rejected(4)


@pytest.mark.parametrize("batch", [[], encoded(NoOpRecord())], ids=["empty", "noop-record"])
def test_noop_batch_only_advances_the_offset(batch: list[bytes]) -> None:
    sm = MetadataStateMachine()
    sm.apply_batch(encoded(broker(1, 1), *topic_records()), offset=2, epoch=1)
    before = sm.image
    sm.apply_batch(batch, offset=3, epoch=2)
    after = sm.image
    assert (after.offset, after.epoch) == (3, 2)
    assert after.brokers is before.brokers and after.topics_by_id is before.topics_by_id


def test_publishers_see_each_batch_in_order_and_a_failing_one_does_not_stop_others() -> None:
    sm = MetadataStateMachine()

    class Broken:
        def on_metadata_update(self, delta: MetadataDelta, new_image: MetadataImage) -> None:
            raise RuntimeError("boom")

    recorder = Recorder()
    sm.add_publisher(Broken())
    sm.add_publisher(recorder)
    sm.apply_batch(encoded(broker(1, 1)), offset=2, epoch=1)
    sm.apply_batch(encoded(*topic_records()), offset=3, epoch=1)
    assert [image.offset for _, image in recorder.calls] == [2, 3]
    delta, image = recorder.calls[1]
    assert delta.created_topics() == {TOPIC_ID: "orders"}
    assert image is sm.image
    sm.remove_publisher(recorder)
    sm.apply_batch([], offset=4, epoch=1)
    assert len(recorder.calls) == 2


def test_snapshot_restore_rebuilds_an_equal_image() -> None:
    sm = MetadataStateMachine()
    other_id = uuid.UUID(int=8, version=4)
    sm.apply_batch(encoded(broker(1, 1), broker(2, 1)), offset=2, epoch=1)
    sm.apply_batch(encoded(UnfenceBrokerRecord(id=1, epoch=1), *topic_records(),
                           *topic_records("gone", other_id)), offset=3, epoch=1)
    sm.apply_batch(encoded(RemoveTopicRecord(topic_id=other_id),
                           ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name="orders",
                                        name="retention.ms", value="1000"),
                           ProducerIdsRecord(broker_id=1, broker_epoch=1, next_producer_id=2000)),
                   offset=6, epoch=3)
    data = sm.snapshot()

    restored = MetadataStateMachine()
    recorder = Recorder()
    restored.add_publisher(recorder)
    restored.restore(data, 6)
    assert restored.image == sm.image
    assert restored.applied_offset == 6 and restored.image.epoch == 3
    assert recorder.calls and recorder.calls[-1][1] is restored.image
    # Applying continues from the restored state.
    restored.apply_batch(encoded(UnfenceBrokerRecord(id=2, epoch=1)), offset=7, epoch=3)
    assert not restored.image.broker(2).fenced


def test_restore_rejects_foreign_bytes() -> None:
    with pytest.raises(MetadataRecordError):
        MetadataStateMachine().restore(b"\x93\x01\x02", 5)
