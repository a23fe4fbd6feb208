"""Rebalances of Raftka's group consumer against a real broker (in-process, real sockets,
real group coordinator): the order of revocation, closing, metadata changes, and requests
made while the group is busy or the coordinator is gone."""

from __future__ import annotations

import time
from typing import Any

import trio
import trio.testing

from broker.group.routing import partition_for_group
from clients.consumer import BlockingConsumer, Consumer
from clients.consumer.group import ClassicMemberState
from metadata.records import PartitionRecord
from tests.unit.clients.consumer.group.test_consumer_group_broker import (FAST, config, in_thread,
    produce)
from tests.unit.broker.group.harness import BROKER_ID, running_group_broker

TP0, TP1 = ("t", 0), ("t", 1)


async def poll_until(consumers: list[Consumer], done: Any, what: str,
                     timeout: float = 20.0, sink: list | None = None) -> None:
    """Poll ``consumers`` in turn until ``done()`` holds, failing after ``timeout``."""
    with trio.move_on_after(timeout):
        while not done():
            for consumer in consumers:
                records = await consumer.poll(50)
                if sink is not None:
                    sink.extend(records)
        return
    raise AssertionError(f"timed out waiting for {what}")


async def test_on_revoke_sees_the_old_assignment_and_generation(tmp_path) -> None:
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("t", 2)
        await in_thread(produce, broker.bootstrap, "t", [b"%d" % i for i in range(10)], 2)
        seen: list[Any] = []
        checks: dict[str, Any] = {}
        async with Consumer(config(broker, "rv", enable_auto_commit=False)) as first, \
                Consumer(config(broker, "rv", enable_auto_commit=False)) as second:
            group = first._group
            assert group is not None
            m = group.membership

            async def on_revoke(partitions: list) -> None:
                generation, member = m.generation_id, m.member_id
                checks["assignment"] = sorted(first.assignment())
                checks["positions"] = {tp: await first.position(tp) for tp in partitions}
                # Let every other task run as far as it can: the member must not rejoin
                # while the listener still holds the partitions.
                await trio.testing.wait_all_tasks_blocked()
                checks["still"] = (m.state, m.generation_id, m.member_id) == \
                    (ClassicMemberState.STABLE, generation, member)
                await first.commit()
                checks["committed"] = await first.committed(partitions)

            first.subscribe(["t"], on_revoke=on_revoke)
            await poll_until([first], lambda: len(seen) == 10, "ten records", sink=seen)
            second.subscribe(["t"])
            await poll_until([first, second], lambda: "committed" in checks
                             and len(first.assignment()) == len(second.assignment()) == 1,
                             "the rebalance", sink=seen)
            assert checks["assignment"] == [TP0, TP1]
            assert checks["positions"] == {TP0: 5, TP1: 5}
            assert checks["still"]
            assert checks["committed"] == {TP0: 5, TP1: 5}
            # Nothing is read twice: the new owner resumes from the commit.
            await poll_until([first, second], lambda: True, "one more poll", sink=seen)
        assert sorted(r.value for r in seen) == sorted(b"%d" % i for i in range(10))


async def test_auto_commit_happens_before_on_revoke(tmp_path) -> None:
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("t", 2)
        await in_thread(produce, broker.bootstrap, "t", [b"%d" % i for i in range(4)], 2)
        at_revoke: dict[str, Any] = {}
        async with Consumer(config(broker, "ac", auto_commit_interval_ms=600000)) as c:
            async def on_revoke(partitions: list) -> None:
                at_revoke.update(await c.committed(partitions))

            c.subscribe(["t"], on_revoke=on_revoke)
            got: list[Any] = []
            await poll_until([c], lambda: len(got) == 4, "four records", sink=got)
            await c.unsubscribe()
        assert at_revoke == {TP0: 2, TP1: 2}


async def test_partitions_lost_by_a_member_that_stopped_polling_go_to_on_lost(
        tmp_path) -> None:
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("t", 2)
        calls: list[tuple[str, list]] = []

        def listener(name: str) -> Any:
            return lambda partitions: calls.append((name, sorted(partitions)))

        async with Consumer(config(broker, "lost", max_poll_interval_ms=500)) as c:
            c.subscribe(["t"], on_assign=listener("assign"), on_revoke=listener("revoke"),
                        on_lost=listener("lost"))
            await poll_until([c], lambda: calls == [("assign", [TP0, TP1])], "the assignment")
            group = c._group
            assert group is not None
            # No poll for max.poll.interval.ms: the member leaves; its partitions are lost.
            with trio.fail_after(20):
                while not group.membership.partitions_lost:
                    await trio.sleep(0.05)
            await poll_until([c], lambda: len(calls) == 3, "the lost partitions handed back")
        # Leaving in close() gives up partitions still this member's: on_revoke.
        assert calls == [("assign", [TP0, TP1]), ("lost", [TP0, TP1]),
                         ("assign", [TP0, TP1]), ("revoke", [TP0, TP1])]


async def test_leaving_right_after_subscribe_does_not_hang(tmp_path) -> None:
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("t", 1)
        with trio.fail_after(15):
            async with Consumer(config(broker, "quick")) as c:
                c.subscribe(["t"])
            async with Consumer(config(broker, "quick")) as c:
                c.subscribe(["t"])
                c.subscribe(["t", "u"])
            async with Consumer(config(broker, "quick")) as c:
                c.subscribe(["t"])
                c.subscribe(["t", "u"])
                await poll_until([c], lambda: c.assignment() == [TP0], "the assignment")


async def test_the_group_rebalances_when_a_topic_grows_or_appears(tmp_path) -> None:
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("t", 1)
        async with Consumer(config(broker, "grow", metadata_max_age_ms=100)) as c:
            c.subscribe(["t", "later"])
            await poll_until([c], lambda: c.assignment() == [TP0], "the first assignment")
            await broker.publish([PartitionRecord(
                partition_id=1, topic_id=broker.topic_ids["t"], replicas=(BROKER_ID,),
                isr=(BROKER_ID,), leader=BROKER_ID, leader_epoch=0, partition_epoch=0)])
            await poll_until([c], lambda: sorted(c.assignment()) == [TP0, TP1],
                             "the new partition")
            await broker.create_topic("later", 1)
            await in_thread(produce, broker.bootstrap, "later", [b"new"], 1)
            got: list[Any] = []
            await poll_until([c], lambda: any(r.topic == "later" for r in got),
                             "a record of the new topic", sink=got)
            assert sorted(c.assignment()) == sorted([TP0, TP1, ("later", 0)])


async def test_committed_while_the_join_is_held_leaves_the_join_alone(tmp_path) -> None:
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("t", 2)
        await broker.create_topic("u", 1)
        async with Consumer(config(broker, "held", request_timeout_ms=4000)) as a, \
                Consumer(config(broker, "held")) as b:
            a.subscribe(["t"])
            b.subscribe(["t"])
            await poll_until([a, b], lambda: len(a.assignment()) == len(b.assignment()) == 1,
                             "one partition each")
            group = a._group
            assert group is not None
            m = group.membership
            generation = m.generation_id
            a.subscribe(["t", "u"])
            # a revokes and joins; the coordinator holds its JoinGroup until b rejoins,
            # which b only does when it polls.
            await poll_until([a], lambda: m.state == ClassicMemberState.JOINING, "a joining")
            # Well within request.timeout.ms: the OffsetFetch does not queue behind the
            # held JoinGroup (which would time it out and take the join down with it).
            with trio.fail_after(3):
                assert TP0 in await a.committed([TP0])
            assert m.state == ClassicMemberState.JOINING
            await poll_until([a, b], lambda: m.state == ClassicMemberState.STABLE
                             and m.generation_id == generation + 1, "the next generation")


async def test_poll_keeps_to_its_timeout_while_the_coordinator_is_gone(tmp_path) -> None:
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("t", 1)
        await in_thread(produce, broker.bootstrap, "t", [b"%d" % i for i in range(3)], 1)
        async with Consumer(config(broker, "gone", auto_commit_interval_ms=50,
                                   default_api_timeout_ms=20000)) as c:
            c.subscribe(["t"])
            got: list[Any] = []
            await poll_until([c], lambda: len(got) == 3, "three records", sink=got)
            offsets_partition = partition_for_group("gone", 4)
            await broker.move_leader("__consumer_offsets", offsets_partition, 2)
            try:
                # Auto-commits are due at every poll; none may hold poll up.
                for _ in range(5):
                    with trio.fail_after(3):
                        await c.poll(100)
            finally:
                await broker.move_leader("__consumer_offsets", offsets_partition, BROKER_ID)


async def test_cancelling_a_consumer_closes_its_connections(tmp_path) -> None:
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("t", 2)
        consumers: list[Consumer] = []
        with trio.move_on_after(2):
            async with Consumer(config(broker, "cancel")) as c:
                consumers.append(c)
                c.subscribe(["t"])
                while True:
                    await c.poll(100)
        assert consumers[0]._pool.connected_addresses() == set()


def _blocking_settings(bootstrap: str, group: str) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "group.id": group, **FAST}


def _close_inside_a_listener(bootstrap: str) -> list[str]:
    errors: list[str] = []
    with BlockingConsumer(_blocking_settings(bootstrap, "close-in-listener")) as consumer:
        def on_assign(partitions: list) -> None:
            try:
                consumer.close()
            except RuntimeError as exc:
                errors.append(str(exc))

        consumer.subscribe(["t"], on_assign=on_assign)
        deadline = time.monotonic() + 20
        while not errors and time.monotonic() < deadline:
            consumer.poll(100)
    return errors


async def test_blocking_close_inside_a_listener_raises_instead_of_hanging(tmp_path) -> None:
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("t", 1)
        with trio.fail_after(40):
            errors = await trio.to_thread.run_sync(_close_inside_a_listener, broker.bootstrap,
                                                   abandon_on_cancel=True)
        assert len(errors) == 1 and "rebalance listener" in errors[0]


def _crash_in_the_background(bootstrap: str) -> BaseException:
    with BlockingConsumer(_blocking_settings(bootstrap, "crash")) as consumer:
        loop = consumer._loop

        def on_assign(partitions: list) -> None:
            async def broken_task() -> None:
                raise KeyError("a bug in a background task")
            assert loop.consumer is not None and loop.consumer._nursery is not None
            trio.from_thread.run_sync(loop.consumer._nursery.start_soon, broken_task,
                                      trio_token=loop.token)

        consumer.subscribe(["t"], on_assign=on_assign)
        deadline = time.monotonic() + 20
        try:
            while time.monotonic() < deadline:
                consumer.poll(100)
        except BaseException as exc:  # noqa: B036 - what poll raises is the point
            return exc
    raise AssertionError("poll never failed")


async def test_a_background_crash_reaches_poll_as_the_real_error(tmp_path) -> None:
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("t", 1)
        with trio.fail_after(40):
            error = await trio.to_thread.run_sync(_crash_in_the_background, broker.bootstrap,
                                                  abandon_on_cancel=True)
        assert isinstance(error, RuntimeError), repr(error)
        cause = error.__cause__
        assert isinstance(cause, BaseExceptionGroup)
        assert cause.subgroup(KeyError) is not None
