"""Streaming offsets in Kafka's JSON form, read limits and task splitting."""

from __future__ import annotations

import json

from clients.spark.offsets import (
    OffsetRange,
    available_records,
    from_json_offsets,
    rate_limit,
    split_ranges,
    to_json_offsets,
)


def test_json_offsets_have_a_stable_key_order() -> None:
    a = to_json_offsets({("b", 10): 1, ("a", 2): 3, ("b", 9): 4, ("a", 1): 5})
    b = to_json_offsets({("a", 1): 5, ("b", 9): 4, ("a", 2): 3, ("b", 10): 1})
    assert json.dumps(a) == json.dumps(b) == \
        '{"a": {"1": 5, "2": 3}, "b": {"9": 4, "10": 1}}'
    assert from_json_offsets(a) == {("b", 10): 1, ("a", 2): 3, ("b", 9): 4, ("a", 1): 5}


def test_rate_limit_shares_by_backlog() -> None:
    start = {("t", 0): 0, ("t", 1): 0, ("t", 2): 100}
    latest = {("t", 0): 900, ("t", 1): 100, ("t", 2): 100}
    end = rate_limit(start, latest, 100)
    assert end == {("t", 0): 90, ("t", 1): 10, ("t", 2): 100}
    assert available_records(start, end) <= 100
    # Below one record's share a partition still advances by one.
    tiny = rate_limit({("t", 0): 0, ("t", 1): 0}, {("t", 0): 10_000, ("t", 1): 1}, 10)
    assert tiny[("t", 1)] == 1
    assert rate_limit(start, latest, 10_000) == latest


def test_split_ranges() -> None:
    ranges = [OffsetRange("t", 0, 0, 100), OffsetRange("t", 1, 5, 5), OffsetRange("t", 2, 0, 10)]
    assert split_ranges(ranges, None, None) == [ranges[0], ranges[2]]
    capped = split_ranges(ranges, None, 30)
    assert [r.size for r in capped] == [25, 25, 25, 25, 10]
    assert capped[0].start == 0 and capped[-2].end == 100
    spread = split_ranges(ranges, 11, None)
    assert sum(r.size for r in spread) == 110 and len(spread) >= 11
    assert all(r.size > 0 for r in spread)
