"""murmur2 and default partitioning match Java's (values from Kafka's own tests and from
kafka-python's port of the same function)."""

from __future__ import annotations

import random

import pytest

from clients.partitioner import StickyPartitioner, murmur2, partition_for_key, to_positive

# (key, Java Utils.murmur2) pairs; "21" -> -973932308 is in Kafka's UtilsTest.
KNOWN = [
    (b"21", -973932308),
    (b"", 275646681),
    (b"a", -1563381124),
    (b"ab", 316155434),
    (b"abc", 479470107),
    (b"abcd", -1323649548),
    (b"hello world", 1221641059),
    (b"key-42", -187086521),
    (b"\xff\xfe\xfd", 998637092),
    ("héllo".encode(), 614509002),
]


@pytest.mark.parametrize(("key", "expected"), KNOWN)
def test_murmur2_matches_java(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected


def test_murmur2_agrees_with_kafka_python_on_random_keys() -> None:
    from kafka.partitioner.default import murmur2 as reference

    rng = random.Random(7)
    for length in range(64):
        key = rng.randbytes(length)
        unsigned = reference(key) & 0xFFFFFFFF
        assert murmur2(key) & 0xFFFFFFFF == unsigned, key


def test_to_positive_clears_sign_bit_not_abs() -> None:
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-2147483648) == 0
    assert to_positive(5) == 5


def test_keyed_partition_is_positive_murmur_modulo() -> None:
    assert partition_for_key(b"a", 7) == (-1563381124 & 0x7FFFFFFF) % 7
    assert partition_for_key(b"21", 10) == (-973932308 & 0x7FFFFFFF) % 10
    with pytest.raises(ValueError):
        partition_for_key(b"a", 0)


def test_sticky_partitioner_sticks_until_a_batch_worth_of_bytes() -> None:
    sticky = StickyPartitioner(batch_size=100, rng=random.Random(1))
    first = sticky.partition("t", 4, available=[0, 1, 2, 3])
    for _ in range(9):
        sticky.record_produced("t", first, 10, 4, [0, 1, 2, 3])
        assert sticky.partition("t", 4, [0, 1, 2, 3]) == first
    sticky.record_produced("t", first, 10, 4, [0, 1, 2, 3])
    assert sticky.partition("t", 4, [0, 1, 2, 3]) != first


def test_sticky_partitioner_prefers_partitions_with_a_leader() -> None:
    sticky = StickyPartitioner(batch_size=1, rng=random.Random(3))
    chosen = set()
    for _ in range(20):
        p = sticky.partition("t", 4, available=[2])
        chosen.add(p)
        sticky.record_produced("t", p, 1, 4, [2])
    assert chosen == {2}
