"""Generating a topic's partition reassignment onto chosen brokers (pure: layouts in, plan
out), and the plan's text form carried by the confirmation page.

The plan spreads the replicas evenly over the target brokers while moving as few as it can:
each broker may keep up to its share of the topic's replicas (replicas are kept slot by slot
across partitions, so leaders stay where they are first), and every missing replica goes to
the least loaded target broker the partition does not already use."""

from __future__ import annotations

from typing import Mapping, Sequence

Layout = Mapping[int, tuple[int, ...]]  # partition -> replicas, preferred leader first


class PlanError(ValueError):
    """Target brokers that cannot hold the topic; nothing is generated."""


def generate_plan(current: Layout, brokers: Sequence[int]) -> dict[int, tuple[int, ...]]:
    """The new replicas of every partition whose replicas change."""
    targets = sorted(set(brokers))
    if not targets:
        raise PlanError("choose at least one target broker")
    widest = max((len(r) for r in current.values()), default=0)
    if widest > len(targets):
        raise PlanError(f"the topic has {widest} replicas per partition: choose at least "
                        f"{widest} target brokers")
    total = sum(len(r) for r in current.values())
    base, extra = divmod(total, len(targets))
    holding = {b: sum(b in r for r in current.values()) for b in targets}
    # The brokers already holding the most get the remainder: fewer moves.
    ranked = sorted(targets, key=lambda b: (-holding[b], b))
    quota = {b: base + (1 if i < extra else 0) for i, b in enumerate(ranked)}

    kept: dict[int, list[int]] = {p: [] for p in current}
    load = {b: 0 for b in targets}
    for slot in range(widest):
        for p in sorted(current):
            replicas = current[p]
            if slot < len(replicas) and replicas[slot] in load \
                    and load[replicas[slot]] < quota[replicas[slot]]:
                kept[p].append(replicas[slot])
                load[replicas[slot]] += 1
    plan: dict[int, tuple[int, ...]] = {}
    for p in sorted(current):
        chosen = kept[p]
        while len(chosen) < len(current[p]):
            broker = min((b for b in targets if b not in chosen), key=lambda b: (load[b], b))
            chosen.append(broker)
            load[broker] += 1
        if tuple(chosen) != tuple(current[p]):
            plan[p] = tuple(chosen)
    return plan


def encode_plan(plan: Mapping[int, Sequence[int]]) -> str:
    """``0:1,2;3:2,3`` (partition:replicas, ``;`` between partitions)."""
    return ";".join(f"{p}:{','.join(str(b) for b in plan[p])}" for p in sorted(plan))


def decode_plan(text: str) -> dict[int, tuple[int, ...]]:
    plan: dict[int, tuple[int, ...]] = {}
    for item in filter(None, (part.strip() for part in text.split(";"))):
        partition, sep, replicas = item.partition(":")
        try:
            if not sep:
                raise ValueError
            brokers = tuple(int(b) for b in replicas.split(","))
            plan[int(partition)] = brokers
        except ValueError:
            raise PlanError(f"plan entry {item!r}: expected PARTITION:BROKER,BROKER") from None
        if len(set(brokers)) != len(brokers):
            raise PlanError(f"plan entry {item!r} names a broker twice")
    if not plan:
        raise PlanError("the plan is empty")
    return plan
