"""Replica placement for new partitions: striped round-robin, rack-aware, leaders spread.

Brokers are laid out in one ring that alternates racks (r0b0, r1b0, r2b0, r0b1, ...). The
leader of partition p sits at ring position (start + p), so leaders rotate evenly over all
brokers. Followers are taken walking the ring from an offset that shifts each time the
partitions wrap around the ring, so the same leader gets different follower sets; each
replica prefers a rack not yet used by the partition. `start` and the first shift come
from the injected random source, like Kafka's random starting index.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


class PlacementError(ValueError):
    """The request cannot be placed (e.g. more replicas than usable brokers)."""


@dataclass(frozen=True, slots=True)
class UsableBroker:
    """A broker that may receive new replicas, with its rack (None: no rack)."""

    broker_id: int
    rack: str | None = None


def _domain(b: UsableBroker) -> tuple[int, str | int]:
    # A broker without a rack is its own failure domain.
    return (0, b.rack) if b.rack is not None else (1, b.broker_id)


def rack_alternating_ring(brokers: Iterable[UsableBroker]) -> list[UsableBroker]:
    """Brokers ordered so that neighbours are on different racks where possible."""
    by_rack: dict[tuple[int, str | int], list[UsableBroker]] = {}
    for b in sorted(brokers, key=lambda b: b.broker_id):
        by_rack.setdefault(_domain(b), []).append(b)
    racks = [by_rack[k] for k in sorted(by_rack)]
    ring: list[UsableBroker] = []
    for i in range(max((len(r) for r in racks), default=0)):
        ring.extend(r[i] for r in racks if i < len(r))
    return ring


def place_replicas(
    brokers: Sequence[UsableBroker],
    num_partitions: int,
    replication_factor: int,
    rng: random.Random,
    first_partition: int = 0,
) -> list[tuple[int, ...]]:
    """Replica lists (leader first) for partitions first_partition .. +num_partitions-1."""
    if replication_factor <= 0:
        raise PlacementError("replication factor must be positive")
    if num_partitions <= 0:
        raise PlacementError("number of partitions must be positive")
    if replication_factor > len(brokers):
        raise PlacementError(
            f"Unable to replicate the partition {replication_factor} time(s): The target "
            f"replication factor of {replication_factor} cannot be reached because only "
            f"{len(brokers)} broker(s) are registered."
        )
    ring = rack_alternating_ring(brokers)
    n = len(ring)
    start = rng.randrange(n)
    first_shift = rng.randrange(n)
    result = []
    for p in range(first_partition, first_partition + num_partitions):
        leader_pos = (start + p) % n
        shift = 1 + (first_shift + p // n) % max(n - 1, 1)
        result.append(_replicas_for(ring, leader_pos, shift, replication_factor))
    return result


def _replicas_for(ring: list[UsableBroker], leader_pos: int, shift: int, rf: int) -> tuple[int, ...]:
    n = len(ring)
    chosen = [ring[leader_pos]]
    per_domain = Counter([_domain(ring[leader_pos])])
    candidates = [ring[(leader_pos + shift + k) % n] for k in range(n)]
    while len(chosen) < rf:
        used = {b.broker_id for b in chosen}
        # min() keeps the first of equals, so ties follow the ring walk.
        pick = min(
            (b for b in candidates if b.broker_id not in used), key=lambda b: per_domain[_domain(b)]
        )
        chosen.append(pick)
        per_domain[_domain(pick)] += 1
    return tuple(b.broker_id for b in chosen)
