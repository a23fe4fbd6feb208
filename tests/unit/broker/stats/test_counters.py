"""The hot-path statistics: the histogram and the request, topic and replica counters."""

from __future__ import annotations

from types import SimpleNamespace

from broker.stats.counters import BrokerTopicStats, ReplicaStats, RequestStats
from broker.stats.histogram import Histogram
from clients.protocol.messages.fetch import FetchRequestData


def test_histogram_buckets_are_cumulative_with_sum_and_count() -> None:
    histogram = Histogram((1, 10))
    for observed in (0.5, 1, 5, 50):
        histogram.observe(observed)
    assert histogram.cumulative() == [("1.0", 2), ("10.0", 3), ("+Inf", 4)]
    assert (histogram.count, histogram.sum) == (4, 56.5)


def request(api_key: int, version: int, **body: object) -> SimpleNamespace:
    return SimpleNamespace(api_key=api_key, api_version=version, body=body)


def test_request_stats_count_every_error_code_of_a_response() -> None:
    stats = RequestStats()
    body = {"throttle_time_ms": 0, "responses": [{"name": "t", "partition_responses": [
        {"index": 0, "error_code": 0, "records": b"\x00"},
        {"index": 1, "error_code": 6}]}]}
    stats.record(request(0, 9), body, 3.0)
    stats.record(request(0, 8), None, 1.0)
    produce = stats.requests["Produce"]
    assert produce.requests_by_version == {9: 1, 8: 1}
    assert produce.errors_by_code == {0: 1, 6: 1}
    assert produce.total_time_ms.count == 2


def test_error_codes_are_counted_in_generated_message_bodies() -> None:
    from clients.protocol.messages.api_versions import ApiVersionsResponseData

    body = ApiVersionsResponseData(error_code=35, api_keys=[
        ApiVersionsResponseData.ApiVersion(api_key=0, min_version=3, max_version=9)])
    stats = RequestStats()
    stats.record(request(18, 3), body, 1.0)
    assert stats.requests["ApiVersions"].errors_by_code == {35: 1}


def test_fetches_also_count_as_consumer_or_follower_fetches() -> None:
    stats = RequestStats()
    consumer = SimpleNamespace(api_key=1, api_version=12, body=FetchRequestData(replica_id=-1))
    follower = SimpleNamespace(api_key=1, api_version=12, body=FetchRequestData(replica_id=2))
    stats.record(consumer, {"error_code": 0, "responses": []}, 2.0)
    stats.record(follower, {"error_code": 0, "responses": []}, 500.0)
    assert stats.requests["Fetch"].total_time_ms.count == 2
    assert stats.requests["FetchConsumer"].total_time_ms.sum == 2.0
    assert stats.requests["FetchFollower"].total_time_ms.sum == 500.0
    assert stats.requests["Fetch"].errors_by_code == {0: 2}


def test_topic_stats_split_client_and_replication_traffic_and_forget_deleted_topics() -> None:
    stats = BrokerTopicStats()
    stats.record_produce("a", 100, 3)
    stats.record_fetch("a", 40, from_follower=False)
    stats.record_fetch("a", 70, from_follower=True)
    stats.record_produce("b", 1, 1)
    assert (stats.topics["a"].bytes_in, stats.topics["a"].messages_in,
            stats.topics["a"].bytes_out, stats.replication_bytes_out) == (100, 3, 40, 70)
    stats.forget_except(["a"])
    assert list(stats.topics) == ["a"]


def test_replica_stats_count_shrinks_and_expands() -> None:
    stats = ReplicaStats()
    stats.record_isr_change((1, 2, 3), (1, 2))
    stats.record_isr_change((1, 2), (1, 2, 3))
    stats.record_isr_change((1, 2), (1, 2))
    assert (stats.isr_shrinks, stats.isr_expands) == (1, 1)
