"""A broker restarted after a crash replays the metadata it last saw, in which it may still
lead a coordinator partition at an epoch another broker has since superseded: its
coordinators serve nothing until it has caught up with the metadata log."""

from __future__ import annotations

import uuid

import trio

from broker.coordinator.partitions import led_partitions
from broker.group.coordinator import GroupCoordinator
from broker.group.model import GroupCoordinatorSettings
from broker.group.routing import CONSUMER_OFFSETS_TOPIC
from broker.txn.state_manager import TransactionStateManager
from broker.txn.state_topic import TRANSACTION_STATE_TOPIC
from clients.protocol import ErrorCode
from metadata.delta import apply_records
from metadata.image import MetadataImage
from metadata.records import PartitionRecord, TopicRecord
from tests.unit.broker.txn.test_coordinator_runtime import (
    BROKER,
    MemoryLog,
    led_image,
    wait_until,
)


def test_led_partitions_carry_the_leader_epoch_once_caught_up():
    image = led_image(leader_epoch=3)
    assert led_partitions(image, TRANSACTION_STATE_TOPIC, BROKER, True) == {0: 3}
    assert led_partitions(image, TRANSACTION_STATE_TOPIC, BROKER + 1, True) == {}
    assert led_partitions(MetadataImage.empty(), TRANSACTION_STATE_TOPIC, BROKER, True) == {}


def test_a_replayed_image_leads_nothing_before_catching_up():
    assert led_partitions(led_image(leader_epoch=0), TRANSACTION_STATE_TOPIC, BROKER,
                          False) == {}


async def test_the_state_is_loaded_only_after_catching_up_at_the_current_epoch():
    caught_up = False
    state = TransactionStateManager(BROKER, 1, MemoryLog(), clock=lambda: 0,
                                    caught_up=lambda: caught_up)
    async with trio.open_nursery() as nursery:
        # The image replayed from the local metadata log: this broker led at epoch 0.
        await nursery.start(state.run, led_image(leader_epoch=0))
        await trio.sleep(0.05)
        assert state.coordinator_error("t") == ErrorCode.NOT_COORDINATOR
        assert state.coordinator_epoch(0) is None
        caught_up = True
        state.reconcile(led_image(leader_epoch=2))
        await wait_until(lambda: state.coordinator_error("t") == ErrorCode.NONE)
        assert state.coordinator_epoch(0) == 2
        nursery.cancel_scope.cancel()


def offsets_image(leader_epoch: int) -> MetadataImage:
    topic_id = uuid.uuid4()
    _, image = apply_records(MetadataImage.empty(), [
        TopicRecord(name=CONSUMER_OFFSETS_TOPIC, topic_id=topic_id),
        PartitionRecord(partition_id=0, topic_id=topic_id, replicas=(BROKER,), isr=(BROKER,),
                        leader=BROKER, leader_epoch=leader_epoch, partition_epoch=0)])
    return image


async def test_the_group_coordinator_loads_only_after_catching_up():
    caught_up = False
    image = offsets_image(leader_epoch=0)
    groups = GroupCoordinator(BROKER, GroupCoordinatorSettings(num_partitions=1),
                              MemoryLog(),  # type: ignore[arg-type]
                              image=lambda: image, caught_up=lambda: caught_up)
    async with trio.open_nursery() as nursery:
        await nursery.start(groups.run)
        await trio.sleep(0.05)
        assert groups.coordinator_error("g") == ErrorCode.NOT_COORDINATOR
        caught_up = True
        image = offsets_image(leader_epoch=2)
        groups.reconcile(image)
        await wait_until(lambda: groups.coordinator_error("g") == ErrorCode.NONE)
        nursery.cancel_scope.cancel()
