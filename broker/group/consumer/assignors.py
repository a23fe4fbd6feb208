"""Server-side assignors of consumer groups: `uniform` and `range` (Kafka's names).

An assignor gets every member's subscribed topic names, the subscribed topics' metadata and
the current target assignment, and returns the new target for every member. Pure.
"""

from __future__ import annotations

import uuid
from typing import Callable, Mapping

from broker.group.consumer.model import Assignment, TopicMetadata

Subscriptions = Mapping[str, frozenset[str]]
Assignor = Callable[[Subscriptions, TopicMetadata, Mapping[str, Assignment]],
                    dict[str, Assignment]]
Partition = tuple[uuid.UUID, int]


def _as_assignment(partitions: set[Partition]) -> Assignment:
    out: dict[uuid.UUID, set[int]] = {}
    for topic, p in partitions:
        out.setdefault(topic, set()).add(p)
    return {topic: frozenset(parts) for topic, parts in out.items()}


def uniform(subscriptions: Subscriptions, topics: TopicMetadata,
            current: Mapping[str, Assignment]) -> dict[str, Assignment]:
    """Balanced and sticky: members keep what they hold while it is still theirs to hold
    and within their fair share; free partitions go to the least loaded eligible member;
    then partitions move from a member to an eligible one holding two or more fewer."""
    eligible: dict[Partition, list[str]] = {}
    order: list[Partition] = []
    for name in sorted(topics):
        topic_id, count = topics[name]
        subscribers = sorted(m for m, subscribed in subscriptions.items() if name in subscribed)
        if not subscribers:
            continue
        for p in range(count):
            eligible[(topic_id, p)] = subscribers
            order.append((topic_id, p))
    owned: dict[str, set[Partition]] = {m: set() for m in subscriptions}
    if not owned:
        return {}
    # A fair share when every member may take every partition: floor, plus one for some.
    quota = -(-len(order) // len(owned)) if owned else 0
    taken: set[Partition] = set()
    for member in sorted(subscriptions):
        for topic, parts in sorted(current.get(member, {}).items()):
            for p in sorted(parts):
                tp = (topic, p)
                if tp in eligible and member in eligible[tp] and tp not in taken \
                        and len(owned[member]) < quota:
                    owned[member].add(tp)
                    taken.add(tp)
    # Partitions with fewer candidates first, so they are not starved by wider ones.
    free = sorted((tp for tp in order if tp not in taken), key=lambda tp: len(eligible[tp]))
    for tp in free:
        member = min(eligible[tp], key=lambda m: (len(owned[m]), m))
        owned[member].add(tp)
    _balance(owned, eligible)
    return {member: _as_assignment(parts) for member, parts in owned.items()}


def _balance(owned: dict[str, set[Partition]], eligible: Mapping[Partition, list[str]]) -> None:
    moved = True
    while moved:
        moved = False
        for member in sorted(owned, key=lambda m: (-len(owned[m]), m)):
            for tp in sorted(owned[member], key=str):
                target = min(eligible[tp], key=lambda m: (len(owned[m]), m))
                if len(owned[target]) + 1 < len(owned[member]):
                    owned[member].discard(tp)
                    owned[target].add(tp)
                    moved = True


def range_assignor(subscriptions: Subscriptions, topics: TopicMetadata,
                   current: Mapping[str, Assignment]) -> dict[str, Assignment]:
    """Per topic, its subscribers in member id order each get a contiguous range: the
    partition count divided evenly, the first ones one more when it does not divide."""
    owned: dict[str, set[Partition]] = {m: set() for m in subscriptions}
    for name in sorted(topics):
        topic_id, count = topics[name]
        subscribers = sorted(m for m, subscribed in subscriptions.items() if name in subscribed)
        if not subscribers:
            continue
        share, extra = divmod(count, len(subscribers))
        start = 0
        for index, member in enumerate(subscribers):
            size = share + (1 if index < extra else 0)
            owned[member].update((topic_id, p) for p in range(start, start + size))
            start += size
    return {member: _as_assignment(parts) for member, parts in owned.items()}


ASSIGNORS: dict[str, Assignor] = {"uniform": uniform, "range": range_assignor}
# Kafka also accepts the assignors' class names in group.consumer.assignors.
CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}
