"""A compression.type whose codec this installation cannot write is refused where it is
configured (CreateTopics, IncrementalAlterConfigs, the server's own properties), never left
for the leader to ignore."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator

import pytest

from broker.config import ConfigError, ServerConfig
from broker.controller_server import broker_config_validator, controller_settings_from_config
from clients.protocol import ApiKey, ErrorCode
from clients.records import compression
from metadata.controller.configs import OP_SET, incremental_alter_configs
from tests.unit.broker.controller_server.test_settings import COMBINED
from tests.unit.metadata.controller.harness import Cluster, typed


@pytest.fixture
def without_zstd(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def missing() -> None:
        raise compression.UnsupportedCompressionError("zstd compression needs the zstandard package")

    monkeypatch.setattr(compression, "_get_zstd", missing)
    yield


@pytest.fixture
def cluster() -> Cluster:
    settings = controller_settings_from_config(ServerConfig(COMBINED), cluster_id="abc")
    c = Cluster(settings=dataclasses.replace(settings, cluster_id=None))
    c.add_brokers(1)
    return c


def create(cluster: Cluster, name: str, codec: str) -> Any:
    return cluster.create_topic(name, configs=[{"name": "compression.type", "value": codec}])


def test_create_topics_refuses_a_codec_that_is_not_installed(cluster: Cluster, without_zstd: None) -> None:
    result = create(cluster, "z", "zstd")
    assert result.error_code == ErrorCode.INVALID_CONFIG
    assert "compression.type zstd" in result.error_message
    assert "zstandard" in result.error_message
    assert "z" not in cluster.image.topics_by_name
    assert create(cluster, "l", "lz4").error_code == 0


def test_an_installed_codec_is_accepted(cluster: Cluster) -> None:
    if not compression.is_available(compression.ZSTD):
        pytest.skip("zstandard is not installed here")
    assert create(cluster, "z", "zstd").error_code == 0


def test_altering_a_topic_to_a_missing_codec_is_refused(cluster: Cluster, without_zstd: None) -> None:
    assert create(cluster, "t", "producer").error_code == 0
    request = {"resources": [{"resource_type": 2, "resource_name": "t", "configs": [
        {"name": "compression.type", "config_operation": OP_SET, "value": "zstd"}]}],
        "validate_only": False}
    records, response = incremental_alter_configs(cluster.image, typed(ApiKey.INCREMENTAL_ALTER_CONFIGS, request), cluster.now_ms,
                                                  settings=cluster.settings)
    assert records == []
    assert response.responses[0].error_code == ErrorCode.INVALID_CONFIG
    assert "zstandard" in response.responses[0].error_message


def test_dynamic_broker_compression_type_is_checked_too(without_zstd: None) -> None:
    validate = broker_config_validator()
    with pytest.raises(ValueError, match="zstandard"):
        validate("compression.type", "zstd")
    validate("compression.type", "gzip")


def test_a_server_configured_with_a_missing_codec_does_not_start(without_zstd: None) -> None:
    with pytest.raises(ConfigError, match="^compression.type: .*zstandard"):
        ServerConfig(COMBINED | {"compression.type": "zstd"})
    ServerConfig(COMBINED | {"compression.type": "lz4"})
