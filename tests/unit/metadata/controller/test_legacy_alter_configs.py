"""The legacy AlterConfigs (key 33): the given set replaces a resource's dynamic configs."""

from __future__ import annotations

import pytest

from broker.controller_server import broker_config_validator
from clients.protocol import ApiKey, ErrorCode
from metadata.controller.configs import legacy_alter_configs
from metadata.records import ConfigRecord
from metadata.settings import ControllerSettings
from tests.unit.metadata.controller.harness import Cluster, typed


@pytest.fixture
def cluster() -> Cluster:
    c = Cluster()
    c.add_brokers(1)
    c.create_topic("t", configs=[{"name": "retention.ms", "value": "1000"},
                                 {"name": "segment.ms", "value": "9000"}])
    return c


def _alter(c: Cluster, rtype: int, name: str, configs: dict[str, str | None],
           validate_only: bool = False) -> tuple[list, dict]:
    request = {"resources": [{"resource_type": rtype, "resource_name": name, "configs": [
        {"name": k, "value": v} for k, v in configs.items()]}], "validate_only": validate_only}
    settings = ControllerSettings(validate_broker_config=broker_config_validator())
    records, response = legacy_alter_configs(c.image, typed(ApiKey.ALTER_CONFIGS, request), c.now_ms, settings=settings)
    return records, response.responses[0]


def test_topic_set_is_replaced(cluster: Cluster) -> None:
    records, resp = _alter(cluster, 2, "t", {"retention.ms": "5000",
                                             "follower.replication.throttled.replicas": "0:1"})
    assert resp.error_code == ErrorCode.NONE
    cluster.commit(records)
    assert dict(cluster.image.topic_config("t")) == {
        "retention.ms": "5000", "follower.replication.throttled.replicas": "0:1"}
    assert ConfigRecord(resource_type=2, resource_name="t", name="segment.ms",
                        value=None) in records


def test_broker_set_is_replaced_and_checked(cluster: Cluster) -> None:
    records, resp = _alter(cluster, 4, "1", {"leader.replication.throttled.rate": "100",
                                             "log.cleaner.threads": "2"})
    assert resp.error_code == ErrorCode.NONE
    cluster.commit(records)
    records, resp = _alter(cluster, 4, "1", {"log.cleaner.threads": "3"})
    cluster.commit(records)
    assert dict(cluster.image.broker_config(1)) == {"log.cleaner.threads": "3"}
    records, resp = _alter(cluster, 4, "", {"num.partitions": "3"})
    assert (records, resp.error_code) == ([], ErrorCode.INVALID_REQUEST)
    assert "Cannot update these configs dynamically" in resp.error_message
    records, resp = _alter(cluster, 4, "1", {"log.cleaner.threads": "0"})
    assert (records, resp.error_code) == ([], ErrorCode.INVALID_REQUEST)
    assert resp.error_message == "Log cleaner threads should be at least 1"


@pytest.mark.parametrize("configs,code", [
    ({"leader.replication.throttled.replicas": "0-1"}, ErrorCode.INVALID_CONFIG),
    ({"no.such.config": "1"}, ErrorCode.INVALID_CONFIG),
])
def test_bad_topic_values(cluster: Cluster, configs: dict[str, str], code: int) -> None:
    records, resp = _alter(cluster, 2, "t", configs)
    assert (records, resp.error_code) == ([], code)


def test_validate_only_writes_nothing(cluster: Cluster) -> None:
    records, resp = _alter(cluster, 2, "t", {}, validate_only=True)
    assert (records, resp.error_code) == ([], ErrorCode.NONE)
