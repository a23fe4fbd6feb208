"""The purgatory's wake-ups: which waiters a notification wakes, and which keys it names."""

from __future__ import annotations

import trio

from broker.replica.purgatory import Purgatory


async def test_a_woken_waiter_names_the_keys_notified_since_it_last_asked() -> None:
    purgatory: Purgatory[tuple[str, int]] = Purgatory()
    with purgatory.watch([("t", 0), ("t", 1), ("t", 2)], "Fetch") as waiter:
        assert purgatory.notify(("t", 1)) == 1
        assert purgatory.notify(("t", 2)) == 1
        assert purgatory.notify(("u", 0)) == 0  # watched by nobody
        assert await waiter.wait(trio.current_time() + 5)
        assert waiter.take_fired() == {("t", 1), ("t", 2)}
        assert waiter.take_fired() == set()
        assert not await waiter.wait(trio.current_time() + 0.01)
    assert purgatory.watched_keys() == 0 and purgatory.waiting == {"Fetch": 0}
