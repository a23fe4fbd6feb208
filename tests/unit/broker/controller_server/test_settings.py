"""Controller settings from the server configuration; dynamic broker-config validation."""

from __future__ import annotations

import pytest

from broker.config import ServerConfig
from broker.controller_server import broker_config_validator, controller_settings_from_config

COMBINED = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.quorum.voters": "1@127.0.0.1:9093",
    "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
    "controller.listener.names": "CONTROLLER",
}


def test_kafka_defaults() -> None:
    settings = controller_settings_from_config(ServerConfig(COMBINED), cluster_id="abc")
    assert settings.cluster_id == "abc"
    assert (settings.num_partitions, settings.default_replication_factor) == (1, 1)
    assert settings.unclean_leader_election_enable is False
    assert settings.broker_session_timeout_ms == 9000
    assert settings.delete_topic_enable is True
    assert settings.auto_leader_rebalance_enable is True
    assert settings.leader_imbalance_check_interval_seconds == 300
    assert settings.validate_broker_config is not None
    assert settings.node_id == 1


def test_configured_values_are_used() -> None:
    config = ServerConfig(COMBINED | {
        "num.partitions": "6", "default.replication.factor": "3",
        "unclean.leader.election.enable": "true", "broker.session.timeout.ms": "1500",
        "delete.topic.enable": "false", "auto.leader.rebalance.enable": "false",
        "leader.imbalance.check.interval.seconds": "5"})
    settings = controller_settings_from_config(config)
    assert (settings.num_partitions, settings.default_replication_factor) == (6, 3)
    assert settings.unclean_leader_election_enable and not settings.delete_topic_enable
    assert settings.broker_session_timeout_ms == 1500
    assert not settings.auto_leader_rebalance_enable
    assert settings.leader_imbalance_check_interval_seconds == 5


@pytest.mark.parametrize("name,value", [
    ("unclean.leader.election.enable", "true"),
    ("log.retention.ms", "60000"),
    ("leader.replication.throttled.rate", "1048576"),
    ("follower.replication.throttled.rate", "0"),
    ("log.cleaner.threads", "2"),
    ("log.cleaner.io.max.bytes.per.second", "1e6"),
    ("min.insync.replicas", "3"),
    ("compression.type", "lz4"),
    ("message.max.bytes", "2000000"),
    ("log.roll.ms", "3600000"),
])
def test_validator_accepts_known_dynamic_keys_with_good_values(name: str, value: str) -> None:
    broker_config_validator()(name, value)


@pytest.mark.parametrize("name,value", [
    ("no.such.config", "1"),
    ("num.partitions", "many"),
    ("num.partitions", "0"),
    ("node.id", "7"),
    ("num.partitions", "4"),
    ("leader.replication.throttled.rate", "-1"),
    ("log.cleaner.threads", "0"),
    ("listeners", "PLAINTEXT://:1"),
    # The topic config's own rules apply to a broker-level default.
    ("min.insync.replicas", "0"),
    ("log.retention.ms", "-5"),
    ("log.segment.bytes", "10"),
    ("compression.type", "brotli"),
])
def test_validator_rejects_unknown_static_or_bad_values(name: str, value: str) -> None:
    with pytest.raises(ValueError):
        broker_config_validator()(name, value)


# Of a topic default's unit synonyms only the first is dynamic in Kafka
# (DynamicLogConfig.ReconfigurableConfigs): log.retention.ms, not log.retention.hours.
@pytest.mark.parametrize("name", ["num.partitions", "node.id", "replica.fetch.max.bytes",
                                  "log.retention.hours", "log.retention.minutes",
                                  "log.roll.hours", "log.roll.jitter.hours"])
def test_static_keys_are_not_dynamic(name: str) -> None:
    from metadata.controller.configs import NotDynamicConfig

    with pytest.raises(NotDynamicConfig, match="Cannot update these configs dynamically"):
        broker_config_validator()(name, "1")
