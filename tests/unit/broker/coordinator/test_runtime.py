"""The coordinator runtime over an in-memory internal topic and a state machine that only
records what it is asked: a partition is loaded when this broker leads it, unloaded when the
leadership or its epoch goes, a load that keeps failing gives up (or never does), and a
loaded partition's ordered writer lives as long as the partition is loaded."""

from __future__ import annotations

import uuid
from typing import Any, Iterator

import pytest
import trio

from broker.coordinator.loader import LoadSettings, Unreadable
from broker.coordinator.log import CoordinatorLogError
from broker.coordinator.runtime import CoordinatorRuntime
from broker.coordinator.writer import OrderedWriter
from clients.protocol import ErrorCode
from metadata.delta import apply_records
from metadata.image import MetadataImage
from metadata.records import PartitionRecord, TopicRecord

TOPIC = "__test_state"
BROKER = 1
FAST = LoadSettings(retry_s=0.01, max_retry_s=0.01, attempts=3, give_up_s=1.0)


class LineLog:
    """One partition whose records are text lines; `unreadable_for` reads fail."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.unreadable_for = 0
        self.appended: list[bytes] = []

    async def append(self, partition: int, batch: bytes) -> int:
        self.appended.append(batch)
        return len(self.appended) - 1

    def read_from(self, partition: int, offset: int) -> Iterator[bytes]:
        if self.unreadable_for:
            self.unreadable_for -= 1
            raise CoordinatorLogError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        yield "\n".join(self.lines).encode()

    def log_start_offset(self, partition: int) -> int:
        return 0

    def next_sequence(self, partition: int, producer_id: int, producer_epoch: int) -> int:
        return 0


class Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def apply(self, records: list[Any]) -> None:
        self.lines.extend(records)


class RecordingStateMachine:
    """Notes each install and unload."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def decode(self, chunk: bytes, unreadable: Unreadable) -> Iterator[str]:
        for offset, line in enumerate(chunk.decode().split("\n")):
            if line.startswith("?"):
                unreadable(offset, ValueError(line))
            else:
                yield line

    def new_replay(self, partition: int) -> Lines:
        return Lines()

    def install(self, partition: int, epoch: int, replay: Lines) -> str:
        self.calls.append(("install", partition, epoch, replay.lines))
        return f"{len(replay.lines)} line(s)"

    def unload(self, partition: int, loaded: bool) -> None:
        self.calls.append(("unload", partition, loaded))


def led(leader: int, leader_epoch: int) -> MetadataImage:
    topic_id = uuid.uuid4()
    _, image = apply_records(MetadataImage.empty(), [
        TopicRecord(name=TOPIC, topic_id=topic_id),
        PartitionRecord(partition_id=0, topic_id=topic_id, replicas=(BROKER, 2),
                        isr=(BROKER, 2), leader=leader, leader_epoch=leader_epoch,
                        partition_epoch=0)])
    return image


async def until(predicate, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    with trio.fail_after(timeout):
        while not predicate():
            await trio.sleep(0.001)


async def test_a_led_partition_is_loaded_and_unloaded_with_its_leadership(caplog) -> None:
    state = RecordingStateMachine()
    runtime: CoordinatorRuntime[None] = CoordinatorRuntime(
        BROKER, TOPIC, LineLog(["a", "?bad", "b"]), state, clock=lambda: 0)
    assert runtime.error(0) == ErrorCode.NOT_COORDINATOR
    async with trio.open_nursery() as nursery:
        await nursery.start(runtime.run, led(BROKER, 3))
        await until(lambda: runtime.error(0) == ErrorCode.NONE)
        assert runtime.epoch(0) == 3 and runtime.loaded == {0: 3}
        # The unreadable record is skipped, the others replayed in log order.
        assert state.calls == [("install", 0, 3, ["a", "b"])]
        assert f"{TOPIC}-0: skipping the unreadable record at offset 1" in caplog.text
        # A new leader epoch is a new coordinator: unloaded, then loaded again.
        runtime.reconcile(led(BROKER, 4))
        await until(lambda: runtime.epoch(0) == 4)
        assert state.calls[1:] == [("unload", 0, True), ("install", 0, 4, ["a", "b"])]
        runtime.reconcile(led(2, 5))
        assert runtime.error(0) == ErrorCode.NOT_COORDINATOR and runtime.epoch(0) is None
        assert state.calls[-1] == ("unload", 0, True)
        nursery.cancel_scope.cancel()


async def test_a_load_that_keeps_failing_gives_up_then_starts_over(autojump_clock) -> None:
    state = RecordingStateMachine()
    log = LineLog(["a"])
    log.unreadable_for = FAST.attempts  # type: ignore[assignment]
    runtime: CoordinatorRuntime[None] = CoordinatorRuntime(
        BROKER, TOPIC, log, state, load_settings=FAST, clock=lambda: 0)
    async with trio.open_nursery() as nursery:
        await nursery.start(runtime.run, led(BROKER, 1))
        assert runtime.error(0) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        await until(lambda: runtime.error(0) == ErrorCode.COORDINATOR_NOT_AVAILABLE)
        # No metadata change comes: the load starts over by itself after give_up_s.
        await until(lambda: runtime.error(0) == ErrorCode.NONE)
        assert state.calls == [("install", 0, 1, ["a"])]
        nursery.cancel_scope.cancel()


async def test_without_a_limit_on_attempts_a_load_never_gives_up(autojump_clock) -> None:
    state = RecordingStateMachine()
    log = LineLog(["a"])
    log.unreadable_for = 100
    runtime: CoordinatorRuntime[None] = CoordinatorRuntime(
        BROKER, TOPIC, log, state, load_settings=LoadSettings(attempts=None),
        clock=lambda: 0)
    async with trio.open_nursery() as nursery:
        await nursery.start(runtime.run, led(BROKER, 1))
        while log.unreadable_for:
            assert runtime.error(0) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            await trio.sleep(0.5)
        await until(lambda: runtime.error(0) == ErrorCode.NONE)
        nursery.cancel_scope.cancel()


async def test_a_loaded_partition_has_its_ordered_writer_until_unloaded() -> None:
    state = RecordingStateMachine()
    log = LineLog([])
    settled: list[tuple[str, int]] = []
    runtime: CoordinatorRuntime[str] = CoordinatorRuntime(
        BROKER, TOPIC, log, state, clock=lambda: 0,
        writer_for=lambda partition: OrderedWriter(
            TOPIC, partition, log, str.encode, lambda w, code: settled.append((w, code))))
    async with trio.open_nursery() as nursery:
        await nursery.start(runtime.run, led(BROKER, 1))
        assert runtime.writer(0) is None  # not loaded yet
        await until(lambda: runtime.error(0) == ErrorCode.NONE)
        writer = runtime.writer(0)
        assert writer is not None
        await writer.write("first")
        assert log.appended == [b"first"] and settled == [("first", ErrorCode.NONE)]
        runtime.reconcile(led(2, 2))
        assert runtime.writer(0) is None and writer.closed
        await writer.write("late")
        assert settled[-1] == ("late", ErrorCode.NOT_COORDINATOR)
        nursery.cancel_scope.cancel()


def test_the_load_settings_back_off_up_to_their_limit() -> None:
    settings = LoadSettings(retry_s=0.1, max_retry_s=1.0)
    assert [settings.retry_delay(a) for a in range(6)] == pytest.approx(
        [0.1, 0.2, 0.4, 0.8, 1.0, 1.0])
