"""Which partition of a coordinator's internal topic owns a key: Java's String.hashCode,
masked as Kafka's Utils.abs does, modulo the partition count."""

from __future__ import annotations

import pytest

from broker.coordinator.routing import java_string_hashcode, partition_for_key
from broker.group.routing import partition_for_group
from broker.txn.state_topic import partition_for_transactional_id


@pytest.mark.parametrize("text, expected", [
    ("", 0),
    ("a", 97),
    ("hello", 99162322),
    ("Aa", 2112),
    ("BB", 2112),
    # The classic string whose hash is Integer.MIN_VALUE.
    ("polygenelubricants", -2147483648),
    ("\U0001F600", 55357 * 31 + 56832),  # a surrogate pair counts as two UTF-16 units
])
def test_java_string_hashcode_matches_java(text, expected):
    assert java_string_hashcode(text) == expected


def test_partition_for_key_masks_the_sign_like_kafka_utils_abs():
    assert partition_for_key("polygenelubricants", 50) == 0  # MIN_VALUE & 0x7fffffff == 0
    assert partition_for_key("hello", 50) == 99162322 % 50
    negative = java_string_hashcode("my-group")
    assert negative < 0
    assert partition_for_key("my-group", 50) == (negative & 0x7FFFFFFF) % 50
    with pytest.raises(ValueError):
        partition_for_key("g", 0)


def test_groups_and_transactional_ids_route_with_the_same_hash():
    for key in ("my-group", "polygenelubricants", "hello", "\U0001F600"):
        assert partition_for_group(key, 50) == partition_for_key(key, 50)
        assert partition_for_transactional_id(key, 50) == partition_for_key(key, 50)
