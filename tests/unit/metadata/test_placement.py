"""Striped, rack-aware replica placement."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from metadata.placement import PlacementError, UsableBroker, place_replicas, rack_alternating_ring


def brokers(n: int, racks: int = 0) -> list[UsableBroker]:
    return [UsableBroker(i, f"r{i % racks}" if racks else None) for i in range(n)]


@pytest.mark.parametrize("seed", range(5))
def test_replicas_are_distinct_and_leaders_spread_evenly(seed: int) -> None:
    placed = place_replicas(brokers(5), 20, 3, random.Random(seed))
    assert len(placed) == 20
    assert all(len(set(r)) == 3 for r in placed)
    assert set(Counter(r[0] for r in placed).values()) == {4}
    # Every broker carries the same number of replicas overall.
    assert set(Counter(b for r in placed for b in r).values()) == {12}


def test_follower_sets_vary_for_the_same_leader() -> None:
    placed = place_replicas(brokers(4), 16, 2, random.Random(3))
    followers_of_0 = {r[1] for r in placed if r[0] == 0}
    assert len(followers_of_0) > 1


@pytest.mark.parametrize("seed", range(5))
def test_rack_aware_puts_each_replica_on_a_different_rack(seed: int) -> None:
    placed = place_replicas(brokers(9, racks=3), 30, 3, random.Random(seed))
    rack = {b.broker_id: b.rack for b in brokers(9, racks=3)}
    assert all(len({rack[b] for b in r}) == 3 for r in placed)
    assert set(Counter(r[0] for r in placed).values()) <= {3, 4}


def test_uneven_racks_still_spread_racks_first() -> None:
    bs = [UsableBroker(1, "a"), UsableBroker(2, "a"), UsableBroker(3, "a"), UsableBroker(4, "b")]
    rack = {b.broker_id: b.rack for b in bs}
    for r in place_replicas(bs, 12, 2, random.Random(1)):
        assert {rack[b] for b in r} == {"a", "b"}


def test_ring_alternates_racks() -> None:
    ring = rack_alternating_ring(brokers(6, racks=2))
    racks = [b.rack for b in ring]
    assert all(x != y for x, y in zip(racks, racks[1:]))


def test_random_start_comes_from_injected_rng() -> None:
    a = place_replicas(brokers(5), 5, 2, random.Random(1))
    b = place_replicas(brokers(5), 5, 2, random.Random(1))
    assert a == b
    starts = {place_replicas(brokers(5), 1, 1, random.Random(s))[0][0] for s in range(30)}
    assert len(starts) > 1


def test_too_few_brokers() -> None:
    with pytest.raises(PlacementError):
        place_replicas(brokers(2), 1, 3, random.Random(0))
    with pytest.raises(PlacementError):
        place_replicas(brokers(2), 0, 1, random.Random(0))
