"""A topic's effective config on one node: topic override, this node's dynamic config, the
cluster-wide dynamic default, the static file, the default (Kafka's
KafkaConfigSchema.resolveEffectiveTopicConfig), with each value's source."""

from __future__ import annotations

import pytest

from metadata.image import MetadataImage
from metadata.records import BROKER_RESOURCE, ConfigRecord
from metadata.delta import apply_records
from metadata.topic_config_layers import (
    BrokerLayers,
    ConfigSource,
    broker_topic_defaults,
    resolve_topic_config,
    resolve_topic_value,
    topic_config_synonyms,
)
from metadata.topic_configs import TOPIC_CONFIGS

MIN_ISR = "min.insync.replicas"


def _chain(name: str, overrides: dict[str, str], layers: BrokerLayers) -> list[tuple]:
    return [(s.name, s.value, s.source) for s in topic_config_synonyms(name, overrides, layers)]


def test_each_source_in_kafkas_order() -> None:
    every = BrokerLayers(node={MIN_ISR: "4"}, cluster={MIN_ISR: "3"}, static={MIN_ISR: "2"})
    assert resolve_topic_config({MIN_ISR: "5"}, every)[MIN_ISR] == 5
    assert resolve_topic_config({}, every)[MIN_ISR] == 4
    assert resolve_topic_config({}, BrokerLayers(cluster={MIN_ISR: "3"},
                                                 static={MIN_ISR: "2"}))[MIN_ISR] == 3
    assert resolve_topic_config({}, BrokerLayers(static={MIN_ISR: "2"}))[MIN_ISR] == 2
    assert resolve_topic_config({}, BrokerLayers())[MIN_ISR] == 1


def test_layers_from_an_image_take_this_nodes_config_only() -> None:
    _, image = apply_records(MetadataImage.empty(), [
        ConfigRecord(resource_type=BROKER_RESOURCE, resource_name="", name=MIN_ISR, value="3"),
        ConfigRecord(resource_type=BROKER_RESOURCE, resource_name="2", name=MIN_ISR,
                     value="2")])
    static = {MIN_ISR: "1"}
    assert resolve_topic_value(MIN_ISR, {}, BrokerLayers.from_image(image, 1, static)) == 3
    assert resolve_topic_value(MIN_ISR, {}, BrokerLayers.from_image(image, 2, static)) == 2
    assert resolve_topic_value(MIN_ISR, {}, BrokerLayers.from_image(image, None, static)) == 3


def test_a_source_wins_over_any_synonym_of_a_lower_one() -> None:
    # Within one source ms beats minutes beats hours; across sources the source decides.
    layers = BrokerLayers(cluster={"log.retention.minutes": "2"},
                          static={"log.retention.ms": "5", "log.retention.hours": "1"})
    assert resolve_topic_config({}, layers)["retention.ms"] == 120_000
    assert broker_topic_defaults(layers) == {"log.retention.minutes": "2"}
    static_only = BrokerLayers(static={"log.retention.ms": "5", "log.retention.hours": "1"})
    assert resolve_topic_config({}, static_only)["retention.ms"] == 5


def test_a_dynamic_value_that_does_not_parse_is_passed_over() -> None:
    layers = BrokerLayers(node={MIN_ISR: "0"}, cluster={MIN_ISR: "many"},
                          static={MIN_ISR: "2"})
    assert resolve_topic_config({}, layers)[MIN_ISR] == 2
    assert _chain(MIN_ISR, {}, layers)[0] == (MIN_ISR, "2", ConfigSource.STATIC_BROKER_CONFIG)


def test_synonyms_list_every_source_then_the_defaults() -> None:
    layers = BrokerLayers(node={MIN_ISR: "3"}, cluster={MIN_ISR: "2"})
    assert _chain(MIN_ISR, {MIN_ISR: "1"}, layers) == [
        (MIN_ISR, "1", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        (MIN_ISR, "3", ConfigSource.DYNAMIC_BROKER_CONFIG),
        (MIN_ISR, "2", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        (MIN_ISR, "1", ConfigSource.DEFAULT_CONFIG)]
    retention = BrokerLayers(cluster={"log.retention.ms": "60000"},
                             static={"log.retention.hours": "24"})
    assert _chain("retention.ms", {}, retention) == [
        ("log.retention.ms", "60000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("log.retention.hours", "24", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG)]
    # No broker synonym: the topic config's own default.
    assert _chain("follower.replication.throttled.replicas", {}, retention) == [
        ("follower.replication.throttled.replicas", "", ConfigSource.DEFAULT_CONFIG)]


@pytest.mark.parametrize("name", sorted(TOPIC_CONFIGS))
def test_one_key_resolves_as_all_keys_do(name: str) -> None:
    layers = BrokerLayers(node={"compression.type": "lz4", "log.segment.bytes": "2048"},
                          cluster={MIN_ISR: "2", "log.retention.ms": "1000",
                                   "unclean.leader.election.enable": "true"},
                          static={"log.roll.hours": "3", "log.cleanup.policy": "compact"})
    overrides = {"segment.bytes": "4096"}
    assert resolve_topic_value(name, overrides, layers) == resolve_topic_config(
        overrides, layers)[name]
