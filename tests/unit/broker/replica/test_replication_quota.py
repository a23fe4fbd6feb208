"""The replication throttle's rate and throttled-replica bookkeeping."""

from __future__ import annotations

import pytest

from broker.replica.replication_quota import (
    LONG_MAX,
    ReplicationQuota,
    SlidingRate,
    ThrottledReplicasError,
    parse_throttled_replicas,
)


def test_parse_throttled_replicas() -> None:
    assert parse_throttled_replicas("0:1, 1:2") == [(0, 1), (1, 2)]
    assert parse_throttled_replicas(["0:1"]) == [(0, 1)]
    assert parse_throttled_replicas("*") is None
    assert parse_throttled_replicas("") == []
    with pytest.raises(ThrottledReplicasError):
        parse_throttled_replicas("0-1")


def test_rate_counts_from_the_first_byte() -> None:
    rate = SlidingRate(samples=11, sample_seconds=1.0)
    rate.record(1000, now=100.0)
    assert rate.rate(100.5) == pytest.approx(2000)
    assert rate.seconds_until_within(1000, now=100.5) == pytest.approx(0.5)
    assert rate.seconds_until_within(1000, now=101.5) == 0.0


def test_rate_forgets_samples_older_than_the_window() -> None:
    rate = SlidingRate(samples=2, sample_seconds=1.0)
    rate.record(5000, now=0.0)
    assert rate.rate(1.9) == pytest.approx(5000 / 1.9)
    rate.record(100, now=3.0)
    assert rate.rate(3.1) == pytest.approx(100 / 0.1)
    assert SlidingRate().rate(5.0) == 0.0


def test_quota_throttles_only_listed_replicas_of_this_broker() -> None:
    quota = ReplicationQuota(broker_id=2)
    quota.update(1000, {"a": [(0, 1), (1, 2)], "b": None, "c": [(0, 3)]})
    assert quota.active
    assert quota.is_throttled("a", 1) and not quota.is_throttled("a", 0)
    assert quota.is_throttled("b", 7)
    assert not quota.is_throttled("c", 0) and not quota.is_throttled("d", 0)


def test_quota_is_inactive_without_a_rate_or_replicas() -> None:
    quota = ReplicationQuota(broker_id=1)
    quota.update(LONG_MAX, {"a": None})
    assert not quota.active
    quota.update(1000, {"a": [(0, 2)]})
    assert not quota.active


def test_quota_exceeded_until_the_rate_allows() -> None:
    quota = ReplicationQuota(broker_id=1)
    quota.update(1000, {"a": None})
    assert not quota.is_exceeded(10.0)
    quota.record(2000, 10.0)
    assert quota.is_exceeded(11.0)
    assert quota.seconds_until_within(11.0) == pytest.approx(1.0)
    assert not quota.is_exceeded(12.0)
