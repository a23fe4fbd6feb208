"""IncrementalAlterConfigs for topic and broker resources."""

from __future__ import annotations

from typing import Any

import pytest

from clients.protocol import ApiKey, ErrorCode
from metadata.controller.configs import (
    OP_APPEND,
    OP_DELETE,
    OP_SET,
    OP_SUBTRACT,
    incremental_alter_configs,
    incremental_result,
)
from metadata.records import ConfigRecord
from metadata.settings import ControllerSettings
from tests.unit.metadata.controller.harness import Cluster, typed


def op(name: str, operation: int, value: str | None = None) -> dict[str, Any]:
    return {"name": name, "config_operation": operation, "value": value}


def alter(c: Cluster, *resources: tuple[int, str, list[dict[str, Any]]], validate_only: bool = False,
          settings: ControllerSettings | None = None) -> tuple[list, list[dict[str, Any]]]:
    request = {
        "resources": [{"resource_type": t, "resource_name": n, "configs": ops} for t, n, ops in resources],
        "validate_only": validate_only,
    }
    records, response = incremental_alter_configs(c.image, typed(ApiKey.INCREMENTAL_ALTER_CONFIGS, request), c.now_ms, settings=settings or c.settings)
    return records, response.responses


@pytest.fixture
def cluster() -> Cluster:
    c = Cluster()
    c.add_brokers(1)
    c.create_topic("t", configs=[{"name": "retention.ms", "value": "1000"}])
    return c


def test_set_and_delete_topic_configs(cluster: Cluster) -> None:
    records, (resp,) = alter(cluster, (2, "t", [op("segment.ms", OP_SET, "5000"), op("retention.ms", OP_DELETE)]))
    assert resp == incremental_result(2, "t", 0, None)
    assert set(records) == {
        ConfigRecord(resource_type=2, resource_name="t", name="segment.ms", value="5000"),
        ConfigRecord(resource_type=2, resource_name="t", name="retention.ms", value=None),
    }
    cluster.commit(records)
    assert cluster.image.topic_config("t") == {"segment.ms": "5000"}


def test_unchanged_values_write_no_records(cluster: Cluster) -> None:
    records, (resp,) = alter(cluster, (2, "t", [op("retention.ms", OP_SET, "1000"), op("segment.ms", OP_DELETE)]))
    assert resp.error_code == 0 and records == []


def test_append_and_subtract_list_config_start_from_default(cluster: Cluster) -> None:
    records, _ = alter(cluster, (2, "t", [op("cleanup.policy", OP_APPEND, "compact")]))
    assert records[0].value == "delete,compact"
    cluster.commit(records)
    records, _ = alter(cluster, (2, "t", [op("cleanup.policy", OP_SUBTRACT, "delete")]))
    assert records[0].value == "compact"


def test_append_to_non_list_is_invalid_config(cluster: Cluster) -> None:
    records, (resp,) = alter(cluster, (2, "t", [op("retention.ms", OP_APPEND, "5")]))
    assert records == [] and resp.error_code == ErrorCode.INVALID_CONFIG


@pytest.mark.parametrize("ops", [
    [op("retention.ms", OP_SET, "never")],
    [op("no.such.thing", OP_SET, "1")],
    [op("min.insync.replicas", OP_SET, "0")],
])
def test_invalid_topic_config_values(cluster: Cluster, ops: list[dict[str, Any]]) -> None:
    records, (resp,) = alter(cluster, (2, "t", ops))
    assert records == [] and resp.error_code == ErrorCode.INVALID_CONFIG and resp.error_message


def test_validate_only_writes_nothing(cluster: Cluster) -> None:
    records, (resp,) = alter(cluster, (2, "t", [op("segment.ms", OP_SET, "5000")]), validate_only=True)
    assert records == [] and resp.error_code == 0


def test_unknown_topic(cluster: Cluster) -> None:
    _, (resp,) = alter(cluster, (2, "nope", [op("segment.ms", OP_SET, "5000")]))
    assert resp.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_broker_resources(cluster: Cluster) -> None:
    records, responses = alter(
        cluster,
        (4, "", [op("unclean.leader.election.enable", OP_SET, "true")]),
        (4, "1", [op("log.retention.ms", OP_SET, "10")]),
    )
    assert [r.error_code for r in responses] == [0, 0]
    cluster.commit(records)
    assert cluster.image.broker_config() == {"unclean.leader.election.enable": "true"}
    assert cluster.image.broker_config(1) == {"log.retention.ms": "10"}


def test_broker_config_validator_rejects_with_invalid_config(cluster: Cluster) -> None:
    def only_numbers(name: str, value: str) -> None:
        int(value)

    _, (resp,) = alter(cluster, (4, "1", [op("log.retention.ms", OP_SET, "x")]),
                       settings=ControllerSettings(validate_broker_config=only_numbers))
    assert resp.error_code == ErrorCode.INVALID_CONFIG


@pytest.mark.parametrize("resource", [
    (4, "broker-one", [op("a.b", OP_SET, "1")]),
    (8, "x", [op("a.b", OP_SET, "1")]),
    (2, "t", [op("segment.ms", OP_SET, None)]),
    (2, "t", [op("segment.ms", 9, "1")]),
    (2, "t", [op("segment.ms", OP_SET, "1"), op("segment.ms", OP_DELETE)]),
], ids=["bad broker name", "unsupported type", "null value", "unknown op", "duplicate key"])
def test_invalid_requests(cluster: Cluster, resource: tuple[int, str, list[dict[str, Any]]]) -> None:
    records, (resp,) = alter(cluster, resource)
    assert records == [] and resp.error_code == ErrorCode.INVALID_REQUEST


def test_duplicate_resource_fails_both_and_others_still_apply(cluster: Cluster) -> None:
    records, responses = alter(
        cluster,
        (2, "t", [op("segment.ms", OP_SET, "1")]),
        (2, "t", [op("segment.ms", OP_SET, "2")]),
        (4, "", [op("x.y", OP_SET, "1")]),
    )
    assert [r.error_code for r in responses] == [ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST, 0]
    assert records == [ConfigRecord(resource_type=4, resource_name="", name="x.y", value="1")]
