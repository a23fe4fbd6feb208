"""CreateTopics, DeleteTopics and CreatePartitions decisions."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from typing import Any

import pytest

from clients.protocol import ZERO_UUID, ApiKey, ErrorCode
from clients.protocol.messages.create_partitions import CreatePartitionsResponseData
from metadata.controller.partitions import create_partitions
from metadata.controller.topics import create_topics, delete_topics
from metadata.records import ConfigRecord, PartitionRecord, TopicRecord
from metadata.settings import ControllerSettings
from tests.unit.metadata.controller.harness import Cluster, typed


def creatable(name: str, partitions: int = 1, rf: int = 1, **extra: Any) -> dict[str, Any]:
    return {"name": name, "num_partitions": partitions, "replication_factor": rf, "assignments": [], "configs": [], **extra}


def run_create(c: Cluster, *topics: dict[str, Any], validate_only: bool = False) -> tuple[list, list[Any]]:
    request = typed(ApiKey.CREATE_TOPICS, {"topics": list(topics), "timeout_ms": 1000, "validate_only": validate_only})
    records, response = create_topics(c.image, request, c.now_ms, rng=c.rng, settings=c.settings)
    assert response.throttle_time_ms == 0
    return records, response.topics


@pytest.fixture
def cluster() -> Cluster:
    c = Cluster()
    c.add_brokers(1, 2, 3)
    return c


def test_create_topic_records_and_response(cluster: Cluster) -> None:
    records, (result,) = run_create(cluster, creatable("orders", 6, 2, configs=[{"name": "retention.ms", "value": "1000"}]))
    assert result.error_code == 0 and result.error_message is None
    assert (result.num_partitions, result.replication_factor) == (6, 2)
    assert result.configs[0].name == "retention.ms"
    assert isinstance(records[0], TopicRecord) and records[0].topic_id == result.topic_id
    parts = [r for r in records if isinstance(r, PartitionRecord)]
    assert [p.partition_id for p in parts] == list(range(6))
    for p in parts:
        assert len(set(p.replicas)) == 2 and p.isr == p.replicas and p.leader == p.replicas[0]
        assert (p.leader_epoch, p.partition_epoch) == (0, 0)
    # Leaders are spread evenly over the three brokers.
    assert sorted(Counter(p.leader for p in parts).values()) == [2, 2, 2]
    assert [r for r in records if isinstance(r, ConfigRecord)] == [
        ConfigRecord(resource_type=2, resource_name="orders", name="retention.ms", value="1000")
    ]
    cluster.commit(records)
    assert cluster.image.topic("orders").partition_count() == 6
    assert cluster.image.topic_config("orders") == {"retention.ms": "1000"}


def test_defaults_come_from_settings() -> None:
    c = Cluster(settings=ControllerSettings(num_partitions=4, default_replication_factor=2))
    c.add_brokers(1, 2)
    _, (result,) = run_create(c, creatable("t", -1, -1))
    assert (result.num_partitions, result.replication_factor) == (4, 2)


def test_validate_only_writes_nothing(cluster: Cluster) -> None:
    records, (result,) = run_create(cluster, creatable("t", 3, 3), validate_only=True)
    assert records == [] and result.error_code == 0 and result.topic_id == ZERO_UUID


@pytest.mark.parametrize(
    "name",
    ["", ".", "..", "a" * 250, "bad name", "bad/name", "ünï"],
)
def test_illegal_topic_names(cluster: Cluster, name: str) -> None:
    records, (result,) = run_create(cluster, creatable(name))
    assert records == [] and result.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_longest_legal_name_is_accepted(cluster: Cluster) -> None:
    _, (result,) = run_create(cluster, creatable("a" * 249))
    assert result.error_code == 0


def test_dot_underscore_collision(cluster: Cluster) -> None:
    cluster.create_topic("a.b")
    _, (result,) = run_create(cluster, creatable("a_b"))
    assert result.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    # Also within one request.
    records, results = run_create(cluster, creatable("x.y"), creatable("x_y"))
    assert [r.error_code for r in results] == [0, ErrorCode.INVALID_TOPIC_EXCEPTION]
    assert sum(isinstance(r, TopicRecord) for r in records) == 1


def test_existing_topic(cluster: Cluster) -> None:
    cluster.create_topic("t")
    _, (result,) = run_create(cluster, creatable("t"))
    assert result.error_code == ErrorCode.TOPIC_ALREADY_EXISTS


def test_duplicate_names_in_one_request(cluster: Cluster) -> None:
    records, results = run_create(cluster, creatable("t"), creatable("t"))
    assert records == [] and [r.error_code for r in results] == [ErrorCode.INVALID_REQUEST] * 2


@pytest.mark.parametrize(("partitions", "rf", "code"), [
    (0, 1, ErrorCode.INVALID_PARTITIONS),
    (-2, 1, ErrorCode.INVALID_PARTITIONS),
    (1, 0, ErrorCode.INVALID_REPLICATION_FACTOR),
    (1, 4, ErrorCode.INVALID_REPLICATION_FACTOR),
])
def test_bad_counts(cluster: Cluster, partitions: int, rf: int, code: int) -> None:
    records, (result,) = run_create(cluster, creatable("t", partitions, rf))
    assert records == [] and result.error_code == code and result.num_partitions == -1


def test_replication_factor_counts_only_unfenced_brokers(cluster: Cluster) -> None:
    cluster.heartbeat(3, want_fence=True)
    _, (result,) = run_create(cluster, creatable("t", 1, 3))
    assert result.error_code == ErrorCode.INVALID_REPLICATION_FACTOR


def test_manual_assignment(cluster: Cluster) -> None:
    assignments = [{"partition_index": 0, "broker_ids": [3, 1]}, {"partition_index": 1, "broker_ids": [2, 3]}]
    records, (result,) = run_create(cluster, creatable("t", -1, -1, assignments=assignments))
    assert result.error_code == 0
    parts = [r for r in records if isinstance(r, PartitionRecord)]
    assert [(p.replicas, p.leader) for p in parts] == [((3, 1), 3), ((2, 3), 2)]


@pytest.mark.parametrize("assignments", [
    [{"partition_index": 0, "broker_ids": [1, 1]}],
    [{"partition_index": 0, "broker_ids": [9]}],
    [{"partition_index": 0, "broker_ids": []}],
    [{"partition_index": 1, "broker_ids": [1]}],
    [{"partition_index": 0, "broker_ids": [1]}, {"partition_index": 0, "broker_ids": [2]}],
    [{"partition_index": 0, "broker_ids": [1]}, {"partition_index": 1, "broker_ids": [1, 2]}],
], ids=["duplicate broker", "unknown broker", "empty", "gap", "repeated index", "uneven rf"])
def test_invalid_manual_assignment(cluster: Cluster, assignments: list[dict[str, Any]]) -> None:
    records, (result,) = run_create(cluster, creatable("t", -1, -1, assignments=assignments))
    assert records == [] and result.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT


def test_manual_assignment_on_fenced_broker_is_invalid(cluster: Cluster) -> None:
    cluster.heartbeat(2, want_fence=True)
    _, (result,) = run_create(cluster, creatable("t", -1, -1, assignments=[{"partition_index": 0, "broker_ids": [2]}]))
    assert result.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT


def test_manual_assignment_with_counts_is_an_invalid_request(cluster: Cluster) -> None:
    _, (result,) = run_create(cluster, creatable("t", 1, -1, assignments=[{"partition_index": 0, "broker_ids": [1]}]))
    assert result.error_code == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize("configs", [
    [{"name": "no.such.config", "value": "1"}],
    [{"name": "retention.ms", "value": "soon"}],
    [{"name": "cleanup.policy", "value": "shred"}],
    [{"name": "retention.ms", "value": None}],
])
def test_invalid_config(cluster: Cluster, configs: list[dict[str, Any]]) -> None:
    records, (result,) = run_create(cluster, creatable("t", configs=configs))
    assert records == [] and result.error_code == ErrorCode.INVALID_CONFIG


def test_topic_ids_are_unique_and_seeded() -> None:
    ids = []
    for _ in range(2):
        c = Cluster(rng=random.Random(42))
        c.add_brokers(1)
        _, results = run_create(c, *(creatable(f"t{i}") for i in range(50)))
        ids.append([r.topic_id for r in results])
    assert ids[0] == ids[1] and len(set(ids[0])) == 50
    assert all(u.version == 4 for u in ids[0])


# ---- DeleteTopics ------------------------------------------------------------------------


def test_delete_by_name_and_by_id(cluster: Cluster) -> None:
    a = cluster.create_topic("a").topic_id
    b = cluster.create_topic("b").topic_id
    request = {"topics": [{"name": "a", "topic_id": ZERO_UUID}, {"name": None, "topic_id": b}], "timeout_ms": 1000}
    records, response = delete_topics(cluster.image, typed(ApiKey.DELETE_TOPICS, request), cluster.now_ms, settings=cluster.settings)
    assert [(r.name, r.topic_id, r.error_code) for r in response.responses] == [("a", a, 0), ("b", b, 0)]
    cluster.commit(records)
    assert cluster.image.topics_by_id == {}


def test_delete_legacy_topic_names_field(cluster: Cluster) -> None:
    cluster.create_topic("a")
    records, response = delete_topics(cluster.image, typed(ApiKey.DELETE_TOPICS, {"topic_names": ["a"], "timeout_ms": 1}, 5), 0, settings=cluster.settings)
    assert len(records) == 1 and response.responses[0].error_code == 0


def test_delete_unknown(cluster: Cluster) -> None:
    request = {"topics": [{"name": "nope", "topic_id": ZERO_UUID}, {"name": None, "topic_id": uuid.uuid4()}]}
    records, response = delete_topics(cluster.image, typed(ApiKey.DELETE_TOPICS, request), 0, settings=cluster.settings)
    assert records == []
    assert [r.error_code for r in response.responses] == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID]


def test_delete_duplicate_and_disabled(cluster: Cluster) -> None:
    tid = cluster.create_topic("a").topic_id
    request = {"topics": [{"name": "a", "topic_id": ZERO_UUID}, {"name": None, "topic_id": tid}]}
    records, response = delete_topics(cluster.image, typed(ApiKey.DELETE_TOPICS, request), 0, settings=cluster.settings)
    assert records == [] and {r.error_code for r in response.responses} == {ErrorCode.INVALID_REQUEST}
    records, response = delete_topics(cluster.image, typed(ApiKey.DELETE_TOPICS, {"topic_names": ["a"]}, 5), 0, settings=ControllerSettings(delete_topic_enable=False))
    assert records == [] and response.responses[0].error_code == ErrorCode.TOPIC_DELETION_DISABLED


# ---- CreatePartitions --------------------------------------------------------------------


def run_grow(c: Cluster, *topics: dict[str, Any], validate_only: bool = False) -> tuple[list, list[Any]]:
    request = typed(ApiKey.CREATE_PARTITIONS, {"topics": list(topics), "timeout_ms": 1000, "validate_only": validate_only})
    records, response = create_partitions(c.image, request, c.now_ms, rng=c.rng)
    return records, response.results


def test_create_partitions_grows_with_same_rf(cluster: Cluster) -> None:
    cluster.create_topic("t", 2, 2)
    records, (result,) = run_grow(cluster, {"name": "t", "count": 5, "assignments": None})
    assert result == CreatePartitionsResponseData.CreatePartitionsTopicResult(name="t", error_code=0, error_message=None)
    assert [(r.partition_id, len(r.replicas)) for r in records] == [(2, 2), (3, 2), (4, 2)]
    cluster.commit(records)
    assert cluster.image.topic("t").partition_count() == 5


def test_create_partitions_validate_only(cluster: Cluster) -> None:
    cluster.create_topic("t")
    records, (result,) = run_grow(cluster, {"name": "t", "count": 3, "assignments": None}, validate_only=True)
    assert records == [] and result.error_code == 0


@pytest.mark.parametrize(("count", "code"), [(1, ErrorCode.INVALID_PARTITIONS), (2, ErrorCode.INVALID_PARTITIONS)])
def test_create_partitions_never_shrinks(cluster: Cluster, count: int, code: int) -> None:
    cluster.create_topic("t", 2)
    records, (result,) = run_grow(cluster, {"name": "t", "count": count, "assignments": None})
    assert records == [] and result.error_code == code


def test_create_partitions_unknown_topic_and_duplicates(cluster: Cluster) -> None:
    cluster.create_topic("t")
    _, results = run_grow(cluster, {"name": "nope", "count": 3, "assignments": None},
                          {"name": "t", "count": 3, "assignments": None}, {"name": "t", "count": 4, "assignments": None})
    assert [r.error_code for r in results] == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST]


def test_create_partitions_manual_assignments(cluster: Cluster) -> None:
    cluster.create_topic("t", 1, 2)
    records, (result,) = run_grow(cluster, {"name": "t", "count": 2, "assignments": [{"broker_ids": [3, 2]}]})
    assert result.error_code == 0 and records[0].replicas == (3, 2) and records[0].partition_id == 1
    for assignments in ([{"broker_ids": [3]}], [{"broker_ids": [3, 2]}, {"broker_ids": [1, 2]}], [{"broker_ids": [3, 9]}]):
        records, (result,) = run_grow(cluster, {"name": "t", "count": 2, "assignments": assignments})
        assert records == [] and result.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT


def test_create_partitions_rf_above_live_brokers(cluster: Cluster) -> None:
    cluster.create_topic("t", 1, 3)
    cluster.heartbeat(1, want_fence=True)
    records, (result,) = run_grow(cluster, {"name": "t", "count": 2, "assignments": None})
    assert records == [] and result.error_code == ErrorCode.INVALID_REPLICATION_FACTOR
