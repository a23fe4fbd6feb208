"""The decisions of `raftka reassign-partitions`, free of I/O: the proposed plan of
`--generate`, the replication throttles of `--execute --throttle`, and the lines of
`--verify`, `--list` and `--cancel`, as kafka-reassign-partitions.sh prints them."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from broker.cli.reassignment_json import (Assignment, ReassignmentInputError, TopicPartition,
                                          partition_name)
from metadata.placement import PlacementError, UsableBroker, place_replicas

LEADER_THROTTLED_RATE = "leader.replication.throttled.rate"
FOLLOWER_THROTTLED_RATE = "follower.replication.throttled.rate"
LEADER_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"
BROKER_THROTTLES = (LEADER_THROTTLED_RATE, FOLLOWER_THROTTLED_RATE)
TOPIC_THROTTLES = (LEADER_THROTTLED_REPLICAS, FOLLOWER_THROTTLED_REPLICAS)

# ---- --generate ----


def brokers_for_plan(requested: Sequence[int], racks: Mapping[int, str | None],
                     rack_aware: bool) -> list[UsableBroker]:
    """The `--broker-list` brokers with their racks (`racks`: every registered broker).
    An unregistered id is an error; so is a mix of brokers with and without a rack unless
    rack awareness is off, as in Kafka."""
    unknown = [b for b in requested if b not in racks]
    if unknown:
        raise ReassignmentInputError(f"Unknown broker id {unknown[0]}")
    brokers = [UsableBroker(b, racks[b] if rack_aware else None) for b in requested]
    rackless = sum(1 for b in brokers if b.rack is None)
    if rack_aware and 0 < rackless < len(brokers):
        raise ReassignmentInputError(
            "Not all brokers have rack information. Add --disable-rack-aware in command line "
            "to make replica assignment without rack information.")
    return brokers


def propose_assignment(current: Mapping[TopicPartition, Sequence[int]],
                       brokers: Sequence[UsableBroker], rng: random.Random) -> Assignment:
    """A new placement of every partition of `current` over `brokers`, topic by topic,
    keeping each topic's replication factor: leaders and replicas spread evenly, racks
    alternating (the placement new topics get)."""
    by_topic: dict[str, list[TopicPartition]] = {}
    for tp in sorted(current):
        by_topic.setdefault(tp[0], []).append(tp)
    proposed: Assignment = {}
    for topic, partitions in by_topic.items():
        factor = len(current[partitions[0]])
        try:
            placed = place_replicas(brokers, len(partitions), factor, rng)
        except PlacementError as exc:
            raise ReassignmentInputError(f"topic {topic}: {exc}") from None
        for tp, replicas in zip(partitions, placed):
            proposed[tp] = replicas
    return proposed


# ---- --execute --throttle ----


@dataclass(frozen=True)
class PartitionMove:
    """Where a partition's data comes from and which brokers receive a new copy."""

    sources: frozenset[int]
    destinations: frozenset[int]


def proposed_moves(targets: Mapping[TopicPartition, Sequence[int]],
                   current: Mapping[TopicPartition, Sequence[int]],
                   ongoing: Mapping[TopicPartition, tuple[Sequence[int], Sequence[int]]]
                   ) -> dict[TopicPartition, PartitionMove]:
    """Every move the cluster will be making: the ongoing reassignments (`ongoing`: replicas
    and adding replicas) and the new targets. A partition already moving keeps its original
    replicas as sources."""
    moves: dict[TopicPartition, PartitionMove] = {}
    for tp, (replicas, adding) in ongoing.items():
        sources = frozenset(replicas) - frozenset(adding)
        moves[tp] = PartitionMove(sources, frozenset(adding))
    for tp, replicas in targets.items():
        if tp in moves:
            sources = moves[tp].sources
        elif tp in current:
            sources = frozenset(current[tp])
        else:
            raise ReassignmentInputError(f"Unable to find partition: {partition_name(tp)}")
        moves[tp] = PartitionMove(sources, frozenset(replicas) - sources)
    return moves


def _throttled_replicas(moves: Mapping[TopicPartition, PartitionMove],
                        leader: bool) -> dict[str, str]:
    by_topic: dict[str, set[str]] = {}
    for (topic, partition), move in moves.items():
        brokers = move.sources if leader else move.destinations - move.sources
        entries = by_topic.setdefault(topic, set())
        entries.update(f"{partition}:{broker}" for broker in brokers)
    return {topic: ",".join(sorted(entries)) for topic, entries in by_topic.items()}


def topic_throttles(moves: Mapping[TopicPartition, PartitionMove]) -> dict[str, dict[str, str]]:
    """Per topic, the `*.replication.throttled.replicas` values Kafka's tool sets: leaders
    throttle sending from every source replica, followers throttle fetching into every new
    one."""
    leaders = _throttled_replicas(moves, leader=True)
    followers = _throttled_replicas(moves, leader=False)
    return {topic: {LEADER_THROTTLED_REPLICAS: leaders[topic],
                    FOLLOWER_THROTTLED_REPLICAS: followers[topic]} for topic in leaders}


def reassigning_brokers(moves: Mapping[TopicPartition, PartitionMove]) -> list[int]:
    """Every broker sending or receiving data: those get the throttled rates."""
    return sorted({b for move in moves.values() for b in move.sources | move.destinations})


# ---- --verify, --list, --cancel ----


def verify_lines(targets: Mapping[TopicPartition, Sequence[int]],
                 ongoing: Iterable[TopicPartition],
                 current: Mapping[TopicPartition, Sequence[int]]) -> list[str]:
    """`Status of partition reassignment:` and a line per target partition. `current`:
    the replicas of partitions that exist (a missing one counts as empty)."""
    moving = set(ongoing)
    lines = ["Status of partition reassignment:"]
    for tp in sorted(targets):
        name = partition_name(tp)
        target = list(targets[tp])
        replicas = list(current.get(tp, ()))
        if tp in moving:
            lines.append(f"Reassignment of partition {name} is still in progress.")
        elif replicas == target:
            lines.append(f"Reassignment of partition {name} is completed.")
        else:
            lines.append(f"There is no active reassignment of partition {name}, but replica "
                         f"set is {_ids(replicas)} rather than {_ids(target)}.")
    return lines


def clearing_lines(brokers: Iterable[int], topics: Iterable[str]) -> list[str]:
    """What `--verify` prints when it removes the throttles of a finished reassignment."""
    broker_ids = sorted(set(brokers))
    topic_names = sorted(set(topics))
    return [f"Clearing broker-level throttles on broker{'' if len(broker_ids) == 1 else 's'} "
            f"{_ids(broker_ids)}",
            f"Clearing topic-level throttles on topic{'' if len(topic_names) == 1 else 's'} "
            f"{','.join(topic_names)}",
            "Throttle was removed."]


def list_lines(ongoing: Mapping[TopicPartition, tuple[Sequence[int], Sequence[int],
                                                      Sequence[int]]]) -> list[str]:
    """`--list`: per moving partition its replicas and the replicas being added and
    removed (`ongoing`: replicas, adding, removing)."""
    if not ongoing:
        return ["No partition reassignments found."]
    lines = ["Current partition reassignments:"]
    for tp in sorted(ongoing):
        replicas, adding, removing = ongoing[tp]
        line = f"{partition_name(tp)}: replicas: {_ids(replicas)}."
        if adding:
            line += f" adding: {_ids(adding)}."
        if removing:
            line += f" removing: {_ids(removing)}."
        lines.append(line)
    return lines


def cancellable(ongoing: Mapping[TopicPartition, tuple[Sequence[int], Sequence[int]]],
                targets: Iterable[TopicPartition]) -> list[TopicPartition]:
    """The target partitions with a reassignment to cancel (`ongoing`: adding, removing).
    As in Kafka, a partition only adding replicas with nothing to remove is left alone."""
    wanted = set(targets)
    return sorted(tp for tp, (adding, removing) in ongoing.items()
                  if tp in wanted and (not adding or removing))


def partitions_text(partitions: Iterable[TopicPartition]) -> str:
    return ",".join(partition_name(tp) for tp in sorted(partitions))


def plural(count: int) -> str:
    return "" if count == 1 else "s"


def _ids(ids: Iterable[int]) -> str:
    return ",".join(str(i) for i in ids)
