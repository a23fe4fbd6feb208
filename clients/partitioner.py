"""Choosing a partition for a record, as Kafka's producer does.

Keyed records go to ``to_positive(murmur2(key)) % num_partitions``, bit-for-bit the same
partition Java's ``BuiltInPartitioner`` picks, so Raftka and Java producers agree on where a
key lives. Keyless records use sticky partitioning (KIP-480/KIP-794): they stick to one
partition that has a leader until ``batch.size`` bytes have gone to it, then a new one is
picked at random; this fills batches instead of spreading tiny batches across partitions.
"""

from __future__ import annotations

import random
from typing import Sequence

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

    def __init__(self, batch_size: int, rng: random.Random | None = None) -> None:
        self.batch_size = max(batch_size, 1)
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
                        available: Sequence[int] = ()) -> None:
        """Count ``size`` bytes appended to ``partition``; switch once a batch is full."""
        if self._current.get(topic) != partition:
            return
        produced = self._produced.get(topic, 0) + size
        if produced >= self.batch_size:
            self._current[topic] = self._pick(num_partitions, available, exclude=partition)
            produced = 0
        self._produced[topic] = produced

    def _pick(self, num_partitions: int, available: Sequence[int], exclude: int | None) -> int:
        candidates = [p for p in available if p < num_partitions] or list(range(num_partitions))
        if len(candidates) > 1 and exclude in candidates:
            candidates.remove(exclude)
        return self._rng.choice(candidates)
