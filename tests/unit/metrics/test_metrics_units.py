"""Pure parts of the metrics: the listener key, the histogram, the counters, elections."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from broker.config.errors import ConfigError
from broker.config.metrics_listener import MetricsListener, parse_metrics_listener
from broker.metrics.controller_collector import ElectionCounter
from broker.metrics.histogram import Histogram
from broker.metrics.stats import BrokerTopicStats, ReplicaStats, RequestStats
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage
from metadata.records import PartitionChangeRecord, PartitionRecord, TopicRecord


def test_the_listener_defaults_to_loopback_9404_plus_the_node_offset() -> None:
    assert parse_metrics_listener(None, 1) == MetricsListener("127.0.0.1", 9404)
    assert parse_metrics_listener(None, 3) == MetricsListener("127.0.0.1", 9406)
    assert parse_metrics_listener("", 1) is None
    assert parse_metrics_listener("  ", 1) is None
    assert parse_metrics_listener("http://0.0.0.0:9500", 2) == MetricsListener("0.0.0.0", 9500)
    assert parse_metrics_listener("http://[::1]:9500/", 2) == MetricsListener("::1", 9500)


@pytest.mark.parametrize("text", ["127.0.0.1:9404", "https://127.0.0.1:9404",
                                  "http://127.0.0.1", "http://127.0.0.1:99999",
                                  "http://127.0.0.1:9404/other"])
def test_a_bad_listener_names_the_key(text: str) -> None:
    with pytest.raises(ConfigError, match="raftka.metrics.listener"):
        parse_metrics_listener(text, 1)


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
    stats.record(request(1, 12, replica_id=-1), {"error_code": 0, "responses": []}, 2.0)
    stats.record(request(1, 12, replica_id=2), {"error_code": 0, "responses": []}, 500.0)
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


def test_the_election_counter_counts_leader_changes_and_unclean_ones() -> None:
    topic_id = uuid.uuid4()
    image = MetadataImage.empty()
    created = MetadataDelta(image)
    created.replay(TopicRecord(name="t", topic_id=topic_id), 1)
    created.replay(PartitionRecord(partition_id=0, topic_id=topic_id, replicas=(1, 2, 3),
                                   isr=(1, 2), leader=1), 1)
    counter = ElectionCounter()
    image = image.apply(created)
    counter.on_metadata_update(created, image)
    assert counter.elections == 0  # a new partition's first leader is not an election
    clean = MetadataDelta(image)
    clean.replay(PartitionChangeRecord(partition_id=0, topic_id=topic_id, leader=2), 2)
    image = image.apply(clean)
    counter.on_metadata_update(clean, image)
    unclean = MetadataDelta(image)
    unclean.replay(PartitionChangeRecord(partition_id=0, topic_id=topic_id, leader=3,
                                         isr=(3,)), 3)
    image = image.apply(unclean)
    counter.on_metadata_update(unclean, image)
    assert (counter.elections, counter.unclean_elections) == (2, 1)


async def test_remote_end_offsets_keep_old_values_on_failure_and_forget_unwanted() -> None:
    from broker.metrics.remote_offsets import RemoteEndOffsets

    wanted = [("a", 0), ("b", 1)]
    answers: list[object] = [{("a", 0): 10, ("b", 1): 3}, OSError("leader gone"), {("a", 0): 12}]

    async def read(partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[return-value]

    offsets = RemoteEndOffsets(lambda: wanted, read)
    await offsets.refresh()
    assert (offsets.end_offset(("a", 0)), offsets.end_offset(("b", 1))) == (10, 3)
    await offsets.refresh()  # the read fails: the last values stay
    assert offsets.end_offset(("a", 0)) == 10
    wanted.remove(("b", 1))
    await offsets.refresh()
    assert (offsets.end_offset(("a", 0)), offsets.end_offset(("b", 1))) == (12, None)
