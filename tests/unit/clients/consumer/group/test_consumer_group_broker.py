"""Raftka's consumer in consumer groups against a real broker (in-process, real sockets,
real group coordinator), alone and next to confluent-kafka."""

from __future__ import annotations

import time
from typing import Any, Callable

import trio

from clients.consumer import BlockingConsumer, Consumer
from clients.producer import BlockingProducer
from tests.unit.broker.group.harness import GroupBroker, running_group_broker

FAST = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 100,
        "auto.offset.reset": "earliest", "retry.backoff.ms": 20}


def produce(bootstrap: str, topic: str, values: list[bytes], partitions: int) -> None:
    with BlockingProducer({"bootstrap.servers": bootstrap, "linger.ms": 0}) as producer:
        futures = [producer.send(topic, v, partition=i % partitions)
                   for i, v in enumerate(values)]
        for future in futures:
            future.get(timeout=10)


async def in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    return await trio.to_thread.run_sync(fn, *args)


def config(broker: GroupBroker, group: str, **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": broker.bootstrap, "group.id": group, **FAST,
            **{k.replace("_", "."): v for k, v in extra.items()}}


async def until(probe: Callable[[], Any], what: str, timeout: float = 20.0) -> None:
    """Poll-driven waiting: ``probe`` makes progress itself (it polls the consumers)."""
    with trio.move_on_after(timeout):
        while not await probe():
            pass
        return
    raise AssertionError(f"timed out waiting for {what}")


async def test_two_members_split_then_one_takes_over_without_loss(tmp_path) -> None:
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("t4", 4)
        values = [b"%d" % i for i in range(40)]
        await in_thread(produce, broker.bootstrap, "t4", values, 4)
        seen: list[bytes] = []
        # Auto-commit (the default) commits before partitions are revoked, so the move
        # neither loses nor repeats a record.
        async with Consumer(config(broker, "split")) as first, \
                Consumer(config(broker, "split")) as second:
            first.subscribe(["t4"])
            second.subscribe(["t4"])

            async def balanced() -> bool:
                for consumer in (first, second):
                    seen.extend(r.value for r in await consumer.poll(50))
                return sorted(len(c.assignment()) for c in (first, second)) == [2, 2]

            await until(balanced, "two partitions each")
            owned = set(first.assignment()) | set(second.assignment())
            assert owned == {("t4", p) for p in range(4)}

            async def drained() -> bool:
                for consumer in (first, second):
                    seen.extend(r.value for r in await consumer.poll(50))
                return set(seen) >= set(values)

            await until(drained, "every record")
            await first.commit()
            await second.commit()
            await first.close()
            later = [b"later %d" % i for i in range(20)]
            await in_thread(produce, broker.bootstrap, "t4", later, 4)
            rest: list[bytes] = []

            async def taken_over() -> bool:
                rest.extend(r.value for r in await second.poll(50))
                return len(second.assignment()) == 4 and set(rest) >= set(later)

            await until(taken_over, "the survivor owning all four partitions")
            assert sorted(rest) == sorted(later)
        assert sorted(seen) == sorted(values)   # each record exactly once


def _blocking_commit_then_resume(bootstrap: str) -> tuple[list[bytes], list[bytes], dict]:
    settings = {"bootstrap.servers": bootstrap, "group.id": "resume", **FAST,
                "enable.auto.commit": False}
    produce(bootstrap, "r", [b"%d" % i for i in range(10)], 2)
    first_values: list[bytes] = []
    revoked: list[list] = []
    with BlockingConsumer(settings) as first:
        first.subscribe(["r"], on_revoke=revoked.append)
        deadline = time.monotonic() + 20
        while len(first_values) < 6 and time.monotonic() < deadline:
            first_values += [r.value for r in first.poll(100, max_records=6 - len(first_values))]
        first.commit()
        committed = first.committed([("r", 0), ("r", 1)])
    assert revoked and sorted(revoked[-1]) == [("r", 0), ("r", 1)]
    produce(bootstrap, "r", [b"late %d" % i for i in range(4)], 2)
    second_values: list[bytes] = []
    with BlockingConsumer(settings) as second:
        second.subscribe(["r"])
        deadline = time.monotonic() + 20
        while len(first_values) + len(second_values) < 14 and time.monotonic() < deadline:
            second_values += [r.value for r in second.poll(100)]
    return first_values, second_values, committed


async def test_blocking_consumer_commits_and_a_new_member_resumes(tmp_path) -> None:
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("r", 2)
        first, second, committed = await in_thread(_blocking_commit_then_resume,
                                                   broker.bootstrap)
        assert len(first) == 6 and sum(o or 0 for o in committed.values()) == 6
        everything = [b"%d" % i for i in range(10)] + [b"late %d" % i for i in range(4)]
        assert sorted(first + second) == sorted(everything)


def _mixed_with_confluent(bootstrap: str, raftka: BlockingConsumer) -> list[bytes]:
    from confluent_kafka import Consumer as ConfluentConsumer

    produce(bootstrap, "mix", [b"%d" % i for i in range(40)], 4)
    other = ConfluentConsumer({"bootstrap.servers": bootstrap, "group.id": "mixed",
                               "partition.assignment.strategy": "range",
                               "session.timeout.ms": 6000, "heartbeat.interval.ms": 100,
                               "auto.offset.reset": "earliest", "enable.auto.commit": False})
    other.subscribe(["mix"])
    raftka.subscribe(["mix"])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            message = other.poll(0.05)
            if message is not None and not message.error():
                got.append(message.value())
            got += [r.value for r in raftka.poll(50)]
            theirs = {tp.partition for tp in other.assignment()}
            ours = {p for _, p in raftka.assignment()}
            if len(theirs) == 2 and len(ours) == 2 and len(set(got)) == 40:
                assert theirs | ours == {0, 1, 2, 3}
                return got
        raise AssertionError(f"no shared assignment: confluent {other.assignment()}, "
                             f"raftka {raftka.assignment()}, {len(set(got))} records")
    finally:
        other.close()


async def test_raftka_and_confluent_consumers_share_a_group(tmp_path) -> None:
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("mix", 4)

        def run() -> list[bytes]:
            with BlockingConsumer({"bootstrap.servers": broker.bootstrap, "group.id": "mixed",
                                   **FAST}) as raftka:
                return _mixed_with_confluent(broker.bootstrap, raftka)

        got = await in_thread(run)
        assert set(got) == {b"%d" % i for i in range(40)}
