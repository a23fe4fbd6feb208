"""Offsets as Spark's Kafka source writes them, and the arithmetic on offset ranges (pure).

A streaming offset is Kafka's JSON form ``{"topic": {"0": 23, "1": 5}}``. Spark compares
offsets as JSON strings, so topics are sorted by name and partitions by number: the same
positions always serialise the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping

TopicPartition = tuple[str, int]
PartitionOffsets = dict[TopicPartition, int]


def to_json_offsets(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """``{(topic, partition): offset}`` as the JSON-ready dict, keys in a stable order."""
    out: dict[str, dict[str, int]] = {}
    for topic, partition in sorted(offsets):
        out.setdefault(topic, {})[str(partition)] = int(offsets[(topic, partition)])
    return out


def from_json_offsets(value: Mapping[str, Mapping[str, int]]) -> PartitionOffsets:
    """The inverse of ``to_json_offsets``."""
    return {(topic, int(partition)): int(offset)
            for topic, partitions in value.items() for partition, offset in partitions.items()}


@dataclass(frozen=True)
class OffsetRange:
    """Records ``[start, end)`` of one partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(self.end - self.start, 0)


def rate_limit(start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
               limit: int) -> PartitionOffsets:
    """End offsets that read at most ``limit`` records in total, shared across partitions in
    proportion to each one's backlog (as Spark's Kafka source does)."""
    backlog = {tp: max(latest[tp] - start.get(tp, latest[tp]), 0) for tp in latest}
    total = sum(backlog.values())
    if total <= limit:
        return dict(latest)
    out: PartitionOffsets = {}
    for tp, end in latest.items():
        begin = start.get(tp, end)
        share = limit * backlog[tp] / total
        # Below one record a partition still gets one, otherwise round down: small
        # partitions always advance, and the total stays near the limit.
        step = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(begin + step, end)
    return out


def available_records(start: Mapping[TopicPartition, int],
                      latest: Mapping[TopicPartition, int]) -> int:
    return sum(max(end - start.get(tp, end), 0) for tp, end in latest.items())


def split_ranges(ranges: Iterable[OffsetRange], min_partitions: int | None,
                 max_records: int | None) -> list[OffsetRange]:
    """Spark tasks for ``ranges``: each range cut into pieces of at most ``max_records``, then,
    when fewer than ``min_partitions`` remain, the big ones cut further in proportion to size.
    Empty ranges are dropped."""
    pieces: list[OffsetRange] = []
    for r in ranges:
        if r.size <= 0:
            continue
        parts = 1 if max_records is None else math.ceil(r.size / max_records)
        pieces.extend(_cut(r, parts))
    if min_partitions is None or len(pieces) >= min_partitions:
        return pieces
    total = sum(r.size for r in pieces)
    out: list[OffsetRange] = []
    for r in pieces:
        out.extend(_cut(r, max(round(r.size / total * min_partitions), 1)))
    return out


def _cut(r: OffsetRange, parts: int) -> list[OffsetRange]:
    parts = max(min(parts, r.size), 1)
    bounds = [r.start + r.size * i // parts for i in range(parts + 1)]
    return [OffsetRange(r.topic, r.partition, a, b) for a, b in zip(bounds, bounds[1:])]
