"""Which partition of a coordinator's internal topic owns a key (a group id, a transactional
id): Kafka's `Utils.abs(key.hashCode) % partitionCount`."""

from __future__ import annotations


def java_string_hashcode(value: str) -> int:
    """Java's `String.hashCode`: 31-polynomial over UTF-16 code units, signed 32-bit."""
    data = value.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: str, num_partitions: int) -> int:
    """Kafka's `partitionFor`: `Utils.abs(key.hashCode) % partitionCount`, where
    `Utils.abs(n)` is `n & 0x7fffffff` (so MIN_VALUE maps to 0, not to a negative)."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, not {num_partitions}")
    return (java_string_hashcode(key) & 0x7FFFFFFF) % num_partitions
