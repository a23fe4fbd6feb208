"""Choosing a partition for a record, as Kafka's producer does.

Keyed records go to ``to_positive(murmur2(key)) % num_partitions``, bit-for-bit the same
partition Java's ``BuiltInPartitioner`` picks, so Raftka and Java producers agree on where a
key lives. Keyless records use sticky partitioning (KIP-480/KIP-794): they stick to one
partition that has a leader until ``batch.size`` bytes have gone to it, then a new one is
picked; this fills batches instead of spreading tiny batches across partitions. With
``partitioner.adaptive.partitioning.enable`` (the default) the next one is picked with a
probability that falls with the number of batches queued for it (Kafka's
BuiltInPartitioner: weight ``max_queue + 1 - queue``), so slower brokers get less; with
``partitioner.availability.timeout.ms`` the caller leaves out partitions whose leader has
not taken data for that long.
"""

from __future__ import annotations

import random
import bisect
from typing import Mapping, Sequence

_MASK32 = 0xFFFFFFFF
_SEED = 0x9747B28C
_M = 0x5BD1E995
_R = 24


def murmur2(data: bytes) -> int:
    """Java's ``Utils.murmur2``: a signed 32-bit hash of ``data``."""
    length = len(data)
    h = (_SEED ^ length) & _MASK32
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK32
        k ^= k >> _R
        k = (k * _M) & _MASK32
        h = (h * _M) & _MASK32
        h ^= k
    tail = length % 4
    # Java's switch falls through from case 3 to case 1.
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """Java's ``Utils.toPositive``: clear the sign bit (not ``abs``, which overflows)."""
    return number & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The default partition of a keyed record."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return to_positive(murmur2(key)) % num_partitions


class StickyPartitioner:
    """Sticky partition choice for keyless records, per topic.

    ``partition`` returns the current sticky partition; ``record_produced`` counts bytes
    appended to it and moves on once ``batch_size`` bytes have gone there. Partitions with a
    leader (``available``) are preferred, as in Kafka.
    """

    def __init__(self, batch_size: int, rng: random.Random | None = None,
                 adaptive: bool = True) -> None:
        self.batch_size = max(batch_size, 1)
        self.adaptive = adaptive
        self._rng = rng or random.Random()
        self._current: dict[str, int] = {}
        self._produced: dict[str, int] = {}

    def partition(self, topic: str, num_partitions: int,
                  available: Sequence[int] = ()) -> int:
        current = self._current.get(topic)
        if current is None or current >= num_partitions:
            current = self._pick(num_partitions, available, exclude=None)
            self._current[topic] = current
            self._produced[topic] = 0
        return current

    def record_produced(self, topic: str, partition: int, size: int, num_partitions: int,
                        available: Sequence[int] = (),
                        queue_sizes: Mapping[int, int] | None = None) -> bool:
        """Count ``size`` bytes appended to ``partition``; switch once a batch is full.
        ``queue_sizes`` (batches queued per partition) weighs the next pick when adaptive.
        Returns whether the partition switched."""
        if self._current.get(topic) != partition:
            return False
        produced = self._produced.get(topic, 0) + size
        switched = produced >= self.batch_size
        if switched:
            self._current[topic] = self._pick(num_partitions, available, exclude=partition,
                                              queue_sizes=queue_sizes)
            produced = 0
        self._produced[topic] = produced
        return switched

    def needs_switch(self, topic: str, size: int) -> bool:
        """Whether ``size`` more bytes make the current partition switch (so the caller
        only gathers availability and queue sizes when they are used)."""
        return self._produced.get(topic, 0) + size >= self.batch_size

    def _pick(self, num_partitions: int, available: Sequence[int], exclude: int | None,
              queue_sizes: Mapping[int, int] | None = None) -> int:
        candidates = [p for p in available if p < num_partitions] or list(range(num_partitions))
        if len(candidates) > 1 and exclude in candidates:
            candidates.remove(exclude)
        if not self.adaptive or not queue_sizes or len(candidates) == 1:
            return self._rng.choice(candidates)
        return weighted_pick(candidates, [queue_sizes.get(p, 0) for p in candidates],
                             self._rng)


def weighted_pick(partitions: Sequence[int], queue_sizes: Sequence[int],
                  rng: random.Random) -> int:
    """A partition drawn with weight ``max(queue_sizes) + 1 - its queue size``: an empty
    queue beside a long one is likelier, and equal queues are equally likely."""
    top = max(queue_sizes) + 1
    cumulative: list[int] = []
    total = 0
    for size in queue_sizes:
        total += top - size
        cumulative.append(total)
    return partitions[bisect.bisect_right(cumulative, rng.randrange(total))]
