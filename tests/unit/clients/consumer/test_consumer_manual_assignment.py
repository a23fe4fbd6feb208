"""Raftka's consumer with assign() and group.id against a real broker: no membership, but
positions start at the group's committed offsets and enable.auto.commit commits them, as in
Kafka's consumer."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from clients.consumer import Consumer, NoOffsetForPartitionError
from tests.unit.clients.consumer.group.test_consumer_group_broker import config, in_thread, produce
from tests.unit.broker.group.harness import GroupBroker, running_group_broker

TP = ("m", 0)
VALUES = [b"%d" % i for i in range(10)]


async def poll_values(consumer: Consumer, count: int, timeout: float = 20.0) -> list[bytes]:
    got: list[bytes] = []
    with trio.fail_after(timeout):
        while len(got) < count:
            got.extend(r.value for r in await consumer.poll(100))
    return got


MANUAL: dict[str, Any] = {"enable_auto_commit": False}


async def fill_and_commit(broker: GroupBroker, group: str, offset: int) -> None:
    """Topic "m" with VALUES, and ``group``'s committed offset ``offset`` for it."""
    await broker.create_topic("m", 1)
    await in_thread(produce, broker.bootstrap, "m", VALUES, 1)
    async with Consumer(config(broker, group, **MANUAL)) as committer:
        committer.assign([TP])
        await committer.commit({TP: offset})


async def test_asynchronous_commits_complete_in_order_and_report_failures(tmp_path) -> None:
    async with running_group_broker(tmp_path) as broker:
        await fill_and_commit(broker, "async", 0)
        results: list[Any] = []

        def callback(offsets: dict, error: BaseException | None) -> None:
            results.append((offsets, None if error is None else type(error).__name__))

        # The failing commit ends within default.api.timeout.ms at the latest.
        async with Consumer(config(broker, "async", default_api_timeout_ms=800,
                                   **MANUAL)) as consumer:
            consumer.assign([TP])
            for offset in (1, 2, 3):
                await consumer.commit({TP: offset}, asynchronous=True, callback=callback)
            await consumer.commit({("missing", 0): 1}, asynchronous=True, callback=callback)
            assert results == []                  # callbacks wait for a poll or commit
            with trio.fail_after(20):
                while len(results) < 4:
                    await consumer.poll(50)
            assert (await consumer.committed([TP]))[TP] == 3
        assert results[:3] == [({TP: 1}, None), ({TP: 2}, None), ({TP: 3}, None)]
        assert results[3] == ({("missing", 0): 1}, "KafkaError"), results


async def test_assign_with_a_group_starts_at_the_committed_offset(tmp_path) -> None:
    async with running_group_broker(tmp_path) as broker:
        await fill_and_commit(broker, "g", 4)
        async with Consumer(config(broker, "g", **MANUAL)) as consumer:
            consumer.assign([TP])
            assert await consumer.position(TP) == 4
            assert await poll_values(consumer, 6) == VALUES[4:]
        # Another group has no commit: auto.offset.reset (earliest here) decides.
        async with Consumer(config(broker, "other", **MANUAL)) as fresh:
            fresh.assign([TP])
            assert await poll_values(fresh, 10) == VALUES
        # With reset "none" and no commit there is no position at all.
        async with Consumer(config(broker, "none", auto_offset_reset="none", **MANUAL)) as strict:
            strict.assign([TP])
            with pytest.raises(NoOffsetForPartitionError):
                await strict.poll(2000)


async def test_a_seek_after_assign_wins_over_the_committed_offset(tmp_path) -> None:
    async with running_group_broker(tmp_path) as broker:
        await fill_and_commit(broker, "g", 7)
        async with Consumer(config(broker, "g", **MANUAL)) as consumer:
            consumer.assign([TP])
            consumer.seek(TP, 2)
            assert await poll_values(consumer, 8) == VALUES[2:]
        async with Consumer(config(broker, "g", **MANUAL)) as consumer:
            consumer.assign([TP])
            consumer.seek_to_end([TP])
            assert await consumer.position(TP) == 10


async def test_auto_commit_commits_a_manual_assignment_in_poll_and_on_close(tmp_path) -> None:
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("m", 1)
        await in_thread(produce, broker.bootstrap, "m", VALUES, 1)
        auto = {"auto_commit_interval_ms": 50}
        async with Consumer(config(broker, "auto", **auto)) as consumer:
            consumer.assign([TP])
            consumer.seek(TP, 0)
            await poll_values(consumer, 3)
            position = await consumer.position(TP)
            with trio.fail_after(20):  # poll commits every 50 ms
                while (await consumer.committed([TP]))[TP] != position:
                    await consumer.poll(60)
        async with Consumer(config(broker, "on-close")) as consumer:
            consumer.assign([TP])
            consumer.seek(TP, 5)
            assert await poll_values(consumer, 5) == VALUES[5:]
        async with Consumer(config(broker, "on-close", enable_auto_commit=False)) as reader:
            assert (await reader.committed([TP]))[TP] == 10


async def test_manual_assignment_works_with_zero_timeout_polls(tmp_path) -> None:
    """The lookup and the auto-commits run in the background, so polls that never wait
    still start at the committed offset and get their commits through."""
    async with running_group_broker(tmp_path) as broker:
        await fill_and_commit(broker, "zero", 3)
        async with Consumer(config(broker, "zero", auto_commit_interval_ms=50)) as consumer:
            consumer.assign([TP])
            got: list[bytes] = []
            with trio.fail_after(20):
                while len(got) < 7:
                    got.extend(r.value for r in await consumer.poll(0))
                    await trio.lowlevel.checkpoint()
                assert got == VALUES[3:]
                while (await consumer.committed([TP]))[TP] != 10:
                    await consumer.poll(0)


async def test_assign_with_a_group_needs_async_with() -> None:
    consumer = Consumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g"})
    with pytest.raises(RuntimeError, match="async with"):
        consumer.assign([TP])
    await consumer.close()
