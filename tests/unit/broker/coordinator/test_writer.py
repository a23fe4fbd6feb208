"""The ordered writer of one internal-topic partition: decision order, one write at a time,
waited writes appended in their caller's task, and what `close` and a gone caller leave."""

from __future__ import annotations

from typing import Iterator

import pytest
import trio
import trio.testing

from broker.coordinator.writer import OrderedWriter
from clients.protocol import ErrorCode


class HeldLog:
    """A CoordinatorLog whose appends land at once and commit when the test says so."""

    def __init__(self) -> None:
        self.appended: list[int] = []
        self._commits: list[trio.Event] = []

    async def append(self, partition: int, batch: bytes) -> int:
        self.appended.append(int.from_bytes(batch, "big"))
        commit = trio.Event()
        self._commits.append(commit)
        await commit.wait()
        return len(self.appended) - 1

    def commit_next(self) -> None:
        self._commits.pop(0).set()

    def commit_all(self) -> None:
        """Let every held append commit (a failed test then ends instead of hanging)."""
        while self._commits:
            self.commit_next()

    def read_from(self, partition: int, offset: int) -> Iterator[bytes]:
        return iter(())

    def log_start_offset(self, partition: int) -> int:
        return 0

    def next_sequence(self, partition: int, producer_id: int, producer_epoch: int) -> int:
        return 0


def offset_write(offset: int, settled: list[tuple[int, int]]) -> tuple[int, list]:
    """A write of `offset` that, once settled, notes (offset, code) in `settled`."""
    return offset, settled


def encode(write: tuple[int, list]) -> bytes:
    return write[0].to_bytes(8, "big")


def settle(write: tuple[int, list], code: int) -> None:
    offset, settled = write
    settled.append((offset, code))


@pytest.fixture
def log_and_writer() -> tuple[HeldLog, OrderedWriter, None]:
    log = HeldLog()
    return log, OrderedWriter("__consumer_offsets", 0, log, encode, settle), None


async def test_a_waited_write_on_an_idle_writer_needs_no_writer_task(log_and_writer) -> None:
    log, writer, _ = log_and_writer
    settled: list[tuple[int, int]] = []
    async with trio.open_nursery() as nursery:
        # No writer task runs: the caller appends its own write.
        nursery.start_soon(writer.write, offset_write(5, settled))
        await trio.testing.wait_all_tasks_blocked()
        assert log.appended == [5] and settled == []
        log.commit_next()
    assert settled == [(5, ErrorCode.NONE)]


async def test_writes_behind_a_waited_one_keep_decision_order(log_and_writer) -> None:
    log, writer, _ = log_and_writer
    settled: list[tuple[int, int]] = []
    async with trio.open_nursery() as nursery:
        try:
            nursery.start_soon(writer.run)
            nursery.start_soon(writer.write, offset_write(1, settled))
            await trio.testing.wait_all_tasks_blocked()
            queued = writer.submit(offset_write(2, settled))
            nursery.start_soon(writer.write, offset_write(3, settled))
            await trio.testing.wait_all_tasks_blocked()
            # One write at a time: the later ones wait for the first to commit.
            assert log.appended == [1]
            for expected in ([1, 2], [1, 2, 3]):
                log.commit_next()
                await trio.testing.wait_all_tasks_blocked()
                assert log.appended == expected
            log.commit_next()
            await queued.done.wait()
            await trio.testing.wait_all_tasks_blocked()
        finally:
            log.commit_all()
            nursery.cancel_scope.cancel()
    assert settled == [(1, 0), (2, 0), (3, 0)]


async def test_close_fails_a_waited_write_in_flight_with_not_coordinator(log_and_writer) -> None:
    log, writer, _ = log_and_writer
    settled: list[tuple[int, int]] = []
    results = []

    async def write() -> None:
        results.append(await writer.write(offset_write(7, settled)))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(write)
        await trio.testing.wait_all_tasks_blocked()
        writer.close()
    assert settled == [(7, ErrorCode.NOT_COORDINATOR)]
    assert results[0].code == ErrorCode.NOT_COORDINATOR and results[0].done.is_set()


async def test_a_caller_that_goes_away_still_lets_its_write_settle(log_and_writer) -> None:
    """As a queued write would: a group's pending offsets count depends on its settling."""
    log, writer, _ = log_and_writer
    settled: list[tuple[int, int]] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(writer.write, offset_write(9, settled))
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()  # the caller is cancelled while its write waits
        log.commit_next()
    assert settled == [(9, ErrorCode.NONE)]
