"""The request backlog's pure parts: the memory pool (charges, its one-frame reserve, waiting
for memory) and the count of requests read and not yet handled."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from broker import parking
from broker.network.backlog import MemoryPool, RequestBacklog


def test_charges_within_the_limit_succeed_and_go_back_on_release() -> None:
    pool = MemoryPool(100)
    first, second = pool.charge(), pool.charge()
    assert pool.try_grow(first, 60) and pool.try_grow(second, 40)
    assert pool.used == 100
    first.release()
    first.release()  # idempotent
    assert pool.used == 40 and first.bytes == 0


def test_a_spent_pool_lets_one_frame_grow_past_it_then_refuses() -> None:
    pool = MemoryPool(100)
    filler, big, other = pool.charge(), pool.charge(), pool.charge()
    assert pool.try_grow(filler, 90)
    # Too big for what is free: the reserve lets this one frame go on, to its full size,
    # so a frame larger than what is free (or than the pool) never deadlocks.
    assert pool.try_grow(big, 50) and big.holds_reserve
    assert pool.try_grow(big, 500)
    assert not pool.try_grow(other, 1), "a second frame went past the limit"
    big.release()
    assert not big.holds_reserve and pool.used == 90
    assert pool.try_grow(other, 10)
    assert not pool.try_grow(other, 1) or other.holds_reserve


def test_unbounded_pool_never_refuses() -> None:
    pool = MemoryPool(-1)
    charge = pool.charge()
    assert pool.try_grow(charge, 10**12)
    assert not charge.holds_reserve


async def test_grow_waits_until_memory_is_released() -> None:
    pool = MemoryPool(100)
    holder, reserve, waiter = pool.charge(), pool.charge(), pool.charge()
    pool.try_grow(holder, 100)
    pool.try_grow(reserve, 1)  # takes the reserve
    grown = trio.Event()

    async def grow() -> None:
        await pool.grow(waiter, 30)
        grown.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(grow)
        await trio.testing.wait_all_tasks_blocked()
        assert not grown.is_set()
        holder.release()
        with trio.fail_after(1):
            await grown.wait()
    assert waiter.bytes == 30


async def test_backlog_admits_up_to_its_limit_and_waits_for_a_place() -> None:
    backlog = RequestBacklog(2)
    assert backlog.try_enter() and backlog.try_enter()
    assert not backlog.try_enter()
    entered = trio.Event()

    async def enter() -> None:
        await backlog.enter()
        entered.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(enter)
        await trio.testing.wait_all_tasks_blocked()
        assert not entered.is_set()
        backlog.leave()
        with trio.fail_after(1):
            await entered.wait()
    assert backlog.queued == 2


def test_a_request_gives_back_its_place_and_memory_once_when_it_parks() -> None:
    backlog, pool = RequestBacklog(5), MemoryPool(100)
    assert backlog.try_enter()
    charge = pool.charge()
    pool.try_grow(charge, 70)
    charge.backlog = backlog
    token = parking.handling(charge.release)
    try:
        parking.parked()
        assert backlog.queued == 0 and pool.used == 0
        parking.parked()
    finally:
        parking.handled(token)
    charge.release()
    assert backlog.queued == 0 and pool.used == 0


def test_parked_outside_a_request_does_nothing() -> None:
    parking.parked()


@pytest.mark.parametrize("limit", [0, -1])
def test_zero_or_negative_limit_means_unbounded(limit: int) -> None:
    assert not MemoryPool(limit).bounded
