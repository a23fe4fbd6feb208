"""Kafka's per-request bounds on CreateTopics and CreatePartitions: more than 10,000
partitions (or, for CreateTopics, 10,000 records) in one request is refused as a whole with
POLICY_VIOLATION, before any assignment is built."""

from __future__ import annotations

from typing import Any

import pytest

from clients.protocol import ApiKey, ErrorCode
from clients.protocol.messages.create_partitions import CreatePartitionsRequestData
from clients.protocol.messages.create_topics import CreateTopicsRequestData
from metadata.controller import partitions as partitions_decision
from metadata.controller import topics as topics_decision
from metadata.controller.partitions import create_partitions
from metadata.controller.request_limits import (
    TOO_MANY_PARTITIONS,
    TOO_MANY_RECORDS,
    create_partitions_additions,
    create_topics_partitions,
    fits_one_create_topics,
    requested_partitions,
)
from metadata.controller.topics import create_topics
from metadata.records import PartitionRecord
from metadata.settings import ControllerSettings
from tests.unit.metadata.controller.harness import Cluster, typed

CreatableTopic = CreateTopicsRequestData.CreatableTopic
Growth = CreatePartitionsRequestData.CreatePartitionsTopic


def creatable(name: str, partitions: int = 1, rf: int = 1, **extra: Any) -> CreatableTopic:
    topic = {"name": name, "num_partitions": partitions, "replication_factor": rf,
             "assignments": [], "configs": [], **extra}
    return typed(ApiKey.CREATE_TOPICS, {"topics": [topic]}).topics[0]


def run_create(c: Cluster, topics: list[CreatableTopic], validate_only: bool = False
               ) -> tuple[list, list[Any]]:
    request = CreateTopicsRequestData(topics=topics, timeout_ms=1000, validate_only=validate_only)
    records, response = create_topics(c.image, request, c.now_ms, rng=c.rng, settings=c.settings)
    return records, response.topics


def run_grow(c: Cluster, counts: dict[str, int], validate_only: bool = False
             ) -> tuple[list, list[Any]]:
    request = typed(ApiKey.CREATE_PARTITIONS, {
        "topics": [{"name": n, "count": k, "assignments": None} for n, k in counts.items()],
        "timeout_ms": 1000, "validate_only": validate_only})
    records, response = create_partitions(c.image, request, c.now_ms, rng=c.rng)
    return records, response.results


@pytest.fixture
def cluster() -> Cluster:
    c = Cluster()
    c.add_brokers(1, 2, 3)
    return c


def forbid_placement(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on, fail the test if a decision starts placing replicas."""
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("replicas were placed for a request over the bound")
    monkeypatch.setattr(topics_decision, "place_replicas", refuse)
    monkeypatch.setattr(partitions_decision, "place_replicas", refuse)


@pytest.fixture
def no_placement(monkeypatch: pytest.MonkeyPatch) -> None:
    forbid_placement(monkeypatch)


def assert_refused(records: list, results: list[Any], names: list[str],
                   message: str = TOO_MANY_PARTITIONS) -> None:
    assert records == []
    assert [r.name for r in results] == names
    assert {(r.error_code, r.error_message) for r in results} == {
        (ErrorCode.POLICY_VIOLATION, message)}


# -- counting, as Kafka's validateTotalNumberOfPartitions --------------------------------------

@pytest.mark.parametrize("topic, expected", [
    (creatable("t", 7), 7),
    (creatable("t", -1), 4),  # the controller's num.partitions
    (creatable("t", 0), 0),
    (creatable("t", -5), 0),
    (creatable("t", -1, -1, assignments=[{"partition_index": i, "broker_ids": [1]}
                                         for i in range(3)]), 3),
    # Kafka counts the assignments even when num_partitions is (wrongly) set as well.
    (creatable("t", 500, -1, assignments=[{"partition_index": 0, "broker_ids": [1]}]), 1),
])
def test_partitions_are_counted_as_kafka_counts_them(topic: CreatableTopic, expected: int) -> None:
    assert requested_partitions(topic, 4) == expected


def test_the_count_spans_every_topic_of_the_request() -> None:
    assert create_topics_partitions([creatable("a", 6_000), creatable("b", -1),
                                     creatable("c", -3)], 4_001) == 10_001


def test_one_create_topics_fits_within_both_bounds() -> None:
    # A topic's own record counts too: one topic of 10,000 partitions writes 10,001 records.
    assert fits_one_create_topics([creatable("a", 9_999)], 1)
    assert not fits_one_create_topics([creatable("a", 10_000)], 1)
    # 4,999 topics of one partition write 9,998 records; 5,001 write 10,002.
    assert fits_one_create_topics([creatable(f"t{i}", 1) for i in range(4_999)], 1)
    assert not fits_one_create_topics([creatable(f"t{i}", 1) for i in range(5_001)], 1)
    with_configs = creatable("a", 9_999, configs=[{"name": "retention.ms", "value": "1"}])
    assert not fits_one_create_topics([with_configs], 1)


# -- CreateTopics ------------------------------------------------------------------------------

def test_a_hundred_million_partitions_are_refused_before_placement(
        cluster: Cluster, no_placement: None) -> None:
    records, results = run_create(cluster, [creatable("huge", 100_000_000)])
    assert_refused(records, results, ["huge"])


def test_partitions_over_several_topics_add_up(cluster: Cluster, no_placement: None) -> None:
    names = [f"spread{i}" for i in range(10)]
    records, results = run_create(cluster, [creatable(n, 10_000) for n in names])
    assert_refused(records, results, names)


def test_every_topic_of_a_refused_request_carries_the_refusal(
        cluster: Cluster, no_placement: None) -> None:
    cluster_topics = [creatable("ok", 1), creatable("bad name", 1), creatable("ok", 1),
                      creatable("big", 10_000)]
    records, results = run_create(cluster, cluster_topics)
    assert_refused(records, results, ["ok", "bad name", "ok", "big"])


def test_validate_only_requests_are_held_to_the_bound(cluster: Cluster, no_placement: None) -> None:
    records, results = run_create(cluster, [creatable("t", 10_001)], validate_only=True)
    assert_refused(records, results, ["t"])


def test_the_default_partition_count_counts(no_placement: None) -> None:
    c = Cluster(settings=ControllerSettings(num_partitions=4_000))
    c.add_brokers(1)
    records, results = run_create(c, [creatable(n, -1) for n in ("a", "b", "c")])
    assert_refused(records, results, ["a", "b", "c"])


def test_a_request_of_ten_thousand_records_is_created(cluster: Cluster) -> None:
    records, results = run_create(cluster, [creatable("a", 6_000), creatable("b", 3_998)])
    assert [r.error_code for r in results] == [ErrorCode.NONE, ErrorCode.NONE]
    assert len(records) == 10_000
    assert sum(isinstance(r, PartitionRecord) for r in records) == 9_998


def test_ten_thousand_partitions_pass_the_partition_bound_but_not_the_record_bound(
        cluster: Cluster) -> None:
    # As in Kafka: the partitions are within MAX_PARTITIONS_PER_BATCH, but the two topic
    # records take the request past MAX_RECORDS_PER_USER_OP.
    records, results = run_create(cluster, [creatable("a", 6_000), creatable("b", 4_000)])
    assert_refused(records, results, ["a", "b"], TOO_MANY_RECORDS)


def test_more_than_ten_thousand_records_are_refused(cluster: Cluster) -> None:
    names = [f"t{i}" for i in range(5_001)]
    records, results = run_create(cluster, [creatable(n, 1) for n in names])
    assert_refused(records, results, names, TOO_MANY_RECORDS)
    records, results = run_create(cluster, [creatable("a", 5_000), creatable("b", 5_000)],
                                  validate_only=True)
    assert_refused(records, results, ["a", "b"], TOO_MANY_RECORDS)


def test_failing_topics_write_no_records_and_do_not_count_as_records(cluster: Cluster) -> None:
    # 9,999 partitions in all; were the 999 refused topics written, 11,000 records.
    topics = [creatable("a", 9_000)] + [creatable(f"bad name {i}", 1) for i in range(999)]
    records, results = run_create(cluster, topics)
    assert len(records) == 9_001
    assert [r.error_code for r in results] == [ErrorCode.NONE] + [
        ErrorCode.INVALID_TOPIC_EXCEPTION] * 999


# -- CreatePartitions --------------------------------------------------------------------------

def test_growing_by_more_than_ten_thousand_is_refused_before_placement(
        cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster.create_topic("grow", 1)
    forbid_placement(monkeypatch)
    for count in (10_002, 100_000_000):
        records, results = run_grow(cluster, {"grow": count})
        assert_refused(records, results, ["grow"])
    records, results = run_grow(cluster, {"grow": 10_002}, validate_only=True)
    assert_refused(records, results, ["grow"])
    assert cluster.image.topic("grow").partition_count() == 1


def test_additions_over_several_topics_add_up(cluster: Cluster,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    cluster.create_topic("a", 2)
    cluster.create_topic("b", 1)
    forbid_placement(monkeypatch)
    records, results = run_grow(cluster, {"a": 5_002, "b": 5_002, "missing": 20_000})
    assert_refused(records, results, ["a", "b", "missing"])


def test_only_what_would_be_added_counts(cluster: Cluster) -> None:
    cluster.create_topic("big", 5)
    cluster.create_topic("small", 1)
    entries = [Growth(name="big", count=10_005), Growth(name="small", count=1),
               Growth(name="missing", count=50_000)]
    assert create_partitions_additions(cluster.image, entries) == 10_000
    duplicated = [Growth(name="small", count=20_000), Growth(name="small", count=20_000)]
    assert create_partitions_additions(cluster.image, duplicated) == 0
    records, results = run_grow(cluster, {"big": 10_005})
    assert results[0].error_code == ErrorCode.NONE and len(records) == 10_000
