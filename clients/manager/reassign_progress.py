"""A topic's reassignment progress: each partition's replicas, ISR, and what is still being
added and removed (ListPartitionReassignments), for the page that follows a move."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from clients.manager.gather import ClusterReader
from clients.manager.reach import PageReads, Part


@dataclass(frozen=True)
class MovingPartition:
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]

    @property
    def moving(self) -> bool:
        return bool(self.adding or self.removing)


@dataclass(frozen=True)
class ReassignmentPage:
    topic: str
    partitions: list[MovingPartition] | None  # None: the topic could not be described
    known: bool = True  # False: what is moving could not be read

    @property
    def moving(self) -> int:
        return sum(p.moving for p in self.partitions or ())


async def read_progress(reader: ClusterReader, reads: PageReads, topic: str
                        ) -> ReassignmentPage:
    described = await reads.one(Part("the topic", answers=True),
                                partial(reader.admin.describe_topics, [topic]))
    if described is None:
        return ReassignmentPage(topic, None, False)
    infos = described[0].partitions
    ongoing = await reads.one(Part("the ongoing reassignments"), partial(
        reader.admin.list_partition_reassignments, [(topic, p.partition) for p in infos]))
    by_partition = {o.partition: o for o in ongoing or () if o.topic == topic}
    rows = []
    for p in sorted(infos, key=lambda p: p.partition):
        move = by_partition.get(p.partition)
        rows.append(MovingPartition(p.partition, tuple(move.replicas if move else p.replicas),
                                    tuple(p.isr), tuple(move.adding) if move else (),
                                    tuple(move.removing) if move else ()))
    return ReassignmentPage(topic, rows, ongoing is not None)
