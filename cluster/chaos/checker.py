"""The checker of a fault run: pure functions over what the workload saw and what the
cluster holds at the end, returning every violation with its evidence.

Records are identified by their value (the workload writes unique, numbered values). The
checks are Kafka's promises with acks=all and min.insync.replicas >= 2:

- every acknowledged record is in the final log of its partition exactly once, at the
  offset it was acknowledged at, and one producer's records keep their order;
- every record a consumer read is in the final log at the offset it was read from, and a
  read_committed consumer never reads a record of an aborted transaction;
- after healing, every replica of a partition is byte-identical up to the high watermark;
- controller epochs only increase, and one epoch never has two controllers;
- a group's committed offset for a partition never goes backwards.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class Acknowledged:
    """A record the cluster acknowledged: where, at which offset, from which producer (in
    the order that producer sent it)."""

    partition: TopicPartition
    offset: int
    value: bytes
    producer: str = ""
    sequence: int = 0


@dataclass(frozen=True)
class Read:
    """A record a consumer read."""

    partition: TopicPartition
    offset: int
    value: bytes


@dataclass(frozen=True)
class CommittedOffset:
    """A group's committed offset as observed, in observation order."""

    group: str
    partition: TopicPartition
    offset: int


@dataclass(frozen=True)
class ControllerObservation:
    """An active controller and its epoch as observed, in observation order."""

    epoch: int
    controller: int


@dataclass(frozen=True)
class Violation:
    """One broken promise: its kind and the evidence."""

    kind: str
    partition: TopicPartition | None
    detail: str


@dataclass
class History:
    """Everything a run saw, and the final state after healing."""

    acknowledged: list[Acknowledged] = field(default_factory=list)
    reads: list[Read] = field(default_factory=list)
    # Final log of each partition: (offset, value) in offset order, as the leader serves it.
    final_logs: dict[TopicPartition, list[tuple[int, bytes]]] = field(default_factory=dict)
    # Each replica's log bytes up to the high watermark: partition -> broker id -> bytes.
    replica_bytes: dict[TopicPartition, dict[int, bytes]] = field(default_factory=dict)
    committed_offsets: list[CommittedOffset] = field(default_factory=list)
    controllers: list[ControllerObservation] = field(default_factory=list)
    # Values written in transactions known to be aborted (read_committed must not see them).
    aborted: list[bytes] = field(default_factory=list)


@dataclass
class CheckReport:
    """The violations found, and the counts a run's report prints."""

    violations: list[Violation]
    acknowledged: int
    lost: int
    duplicated: int
    reordered: int

    @property
    def ok(self) -> bool:
        return not self.violations


def check(history: History) -> CheckReport:
    """Run every check over `history`."""
    acked = check_acknowledged(history.acknowledged, history.final_logs)
    violations = (acked + check_reads(history.reads, history.final_logs)
                  + check_aborted_reads(history.reads, history.aborted)
                  + check_replicas(history.replica_bytes)
                  + check_controller_epochs(history.controllers)
                  + check_committed_offsets(history.committed_offsets))
    kinds = Counter(v.kind for v in acked)
    return CheckReport(violations, len(history.acknowledged), kinds["lost"],
                       kinds["duplicated"], kinds["reordered"])


def check_acknowledged(acknowledged: Sequence[Acknowledged],
                       final_logs: Mapping[TopicPartition, Sequence[tuple[int, bytes]]]
                       ) -> list[Violation]:
    """Each acknowledged record once in its partition's final log, at its acknowledged
    offset, and each producer's records in the order it sent them."""
    violations: list[Violation] = []
    where: dict[TopicPartition, dict[bytes, list[int]]] = {}
    for tp, log in final_logs.items():
        offsets: dict[bytes, list[int]] = defaultdict(list)
        for offset, value in log:
            offsets[value].append(offset)
        where[tp] = offsets
    by_producer: dict[tuple[TopicPartition, str], list[tuple[int, int, bytes]]] = \
        defaultdict(list)
    for ack in acknowledged:
        found = where.get(ack.partition, {}).get(ack.value, [])
        if not found:
            violations.append(Violation("lost", ack.partition,
                                        f"{ack.value!r} acknowledged at offset {ack.offset} "
                                        f"is not in the final log"))
            continue
        if len(found) > 1:
            violations.append(Violation("duplicated", ack.partition,
                                        f"{ack.value!r} is at offsets {found}"))
        elif found[0] != ack.offset:
            violations.append(Violation("moved", ack.partition,
                                        f"{ack.value!r} acknowledged at offset {ack.offset} "
                                        f"is at offset {found[0]}"))
        by_producer[(ack.partition, ack.producer)].append((ack.sequence, found[0], ack.value))
    for (tp, producer), sent in by_producer.items():
        sent.sort()
        for (_, earlier_at, earlier), (_, later_at, later) in zip(sent, sent[1:]):
            if later_at < earlier_at:
                violations.append(Violation(
                    "reordered", tp, f"producer {producer!r} sent {earlier!r} before "
                    f"{later!r}, but they are at offsets {earlier_at} and {later_at}"))
    return violations


def check_reads(reads: Iterable[Read],
                final_logs: Mapping[TopicPartition, Sequence[tuple[int, bytes]]]
                ) -> list[Violation]:
    """Every read record is in the final log at the offset it was read from."""
    final = {tp: dict(log) for tp, log in final_logs.items()}
    violations = []
    for read in reads:
        held = final.get(read.partition, {}).get(read.offset)
        if held != read.value:
            what = "nothing" if held is None else repr(held)
            violations.append(Violation("phantom-read", read.partition,
                                        f"{read.value!r} was read at offset {read.offset}; "
                                        f"the final log has {what} there"))
    return violations


def check_aborted_reads(reads: Iterable[Read], aborted: Iterable[bytes]) -> list[Violation]:
    """No read_committed read returns a record of an aborted transaction."""
    aborted_values = set(aborted)
    return [Violation("aborted-read", read.partition,
                      f"{read.value!r} at offset {read.offset} belongs to an aborted "
                      f"transaction")
            for read in reads if read.value in aborted_values]


def check_replicas(replica_bytes: Mapping[TopicPartition, Mapping[int, bytes]]
                   ) -> list[Violation]:
    """All replicas of a partition hold the same bytes up to the high watermark."""
    violations = []
    for tp, replicas in replica_bytes.items():
        if len(set(replicas.values())) > 1:
            sizes = ", ".join(f"broker {b}: {len(data)} bytes"
                              for b, data in sorted(replicas.items()))
            violations.append(Violation("divergent-replicas", tp,
                                        f"replicas differ below the high watermark ({sizes})"))
    return violations


def check_controller_epochs(observations: Sequence[ControllerObservation]
                            ) -> list[Violation]:
    """Epochs never decrease; one epoch never has two controllers."""
    violations = []
    leader_of: dict[int, int] = {}
    highest = None
    for seen in observations:
        if highest is not None and seen.epoch < highest:
            violations.append(Violation("controller-epoch-decreased", None,
                                        f"epoch {seen.epoch} (controller {seen.controller}) "
                                        f"observed after epoch {highest}"))
        highest = seen.epoch if highest is None else max(highest, seen.epoch)
        known = leader_of.setdefault(seen.epoch, seen.controller)
        if known != seen.controller:
            violations.append(Violation("two-controllers-one-epoch", None,
                                        f"epoch {seen.epoch} had controllers {known} and "
                                        f"{seen.controller}"))
    return violations


def check_committed_offsets(commits: Sequence[CommittedOffset]) -> list[Violation]:
    """A group's committed offset per partition never goes backwards."""
    violations = []
    last: dict[tuple[str, TopicPartition], int] = {}
    for commit in commits:
        key = (commit.group, commit.partition)
        previous = last.get(key)
        if previous is not None and commit.offset < previous:
            violations.append(Violation("committed-offset-went-back", commit.partition,
                                        f"group {commit.group!r}: {previous} -> "
                                        f"{commit.offset}"))
        last[key] = max(commit.offset, previous if previous is not None else commit.offset)
    return violations
