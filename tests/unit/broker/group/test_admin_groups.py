"""The admin client's group operations against an in-process broker: list, describe and
delete groups, list and alter a group's offsets."""

from __future__ import annotations

import pytest
import trio

from clients.admin import BlockingAdmin
from clients.protocol import ErrorCode, KafkaError
from tests.unit.broker.group.harness import running_group_broker
from tests.unit.broker.group.test_coordinator_clients import produce, ready


def _exercise(bootstrap: str) -> None:
    produce(bootstrap, "g-topic", 6, 2)  # three records per partition
    with BlockingAdmin({"bootstrap.servers": bootstrap}) as admin:
        admin.alter_group_offsets("admin-group", {("g-topic", 0): 1, ("g-topic", 1): 3})
        assert "admin-group" in [g.group_id for g in admin.list_groups()]
        assert admin.list_group_offsets("admin-group") == {("g-topic", 0): 1, ("g-topic", 1): 3}
        described = admin.describe_groups(["admin-group"])["admin-group"]
        assert (described.group_id, described.state, described.members) == (
            "admin-group", "Empty", ())
        assert described.coordinator_id == 1
        admin.delete_groups(["admin-group"])
        assert "admin-group" not in [g.group_id for g in admin.list_groups()]
        with pytest.raises(KafkaError) as refused:
            admin.delete_groups(["admin-group"])
        assert refused.value.code == ErrorCode.GROUP_ID_NOT_FOUND


async def test_group_operations_of_the_admin_client(tmp_path):
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("g-topic", 2)
        await ready(broker, "admin-group")
        await trio.to_thread.run_sync(_exercise, broker.bootstrap)


def _delete_offsets(bootstrap: str) -> None:
    with BlockingAdmin({"bootstrap.servers": bootstrap}) as admin:
        admin.alter_group_offsets("offsets-group", {("g-topic", 0): 1, ("g-topic", 1): 2,
                                                    ("other", 0): 1})
        admin.delete_group_offsets("offsets-group", [("g-topic", 0), ("other", 0)])
        assert admin.list_group_offsets("offsets-group") == {("g-topic", 1): 2}
        with pytest.raises(KafkaError) as refused:
            admin.delete_group_offsets("no-such-group", [("g-topic", 0)])
        assert refused.value.code == ErrorCode.GROUP_ID_NOT_FOUND


async def test_delete_group_offsets(tmp_path):
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("g-topic", 2)
        await broker.create_topic("other", 1)
        await ready(broker, "offsets-group")
        await trio.to_thread.run_sync(_delete_offsets, broker.bootstrap)
