"""A topic's effective config on one node, and where each value comes from (Kafka's
KafkaConfigSchema.resolveEffectiveTopicConfig).

A topic config's value comes from, highest priority first: the topic's own override
(DYNAMIC_TOPIC_CONFIG); a broker-level synonym set dynamically for this node, resource
"<node.id>" (DYNAMIC_BROKER_CONFIG); the cluster-wide dynamic default, resource ""
(DYNAMIC_DEFAULT_BROKER_CONFIG); the node's properties file (STATIC_BROKER_CONFIG); the
default (DEFAULT_CONFIG). Within one source, synonyms keep their own order
(log.retention.ms, then log.retention.minutes, then log.retention.hours).

Brokers (their logs, min.insync.replicas, DescribeConfigs) and the controller (unclean
leader election) all resolve through here, so a dynamic default reaches the existing topics
that do not override it as soon as a node applies its record. Pure and I/O-free.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from types import MappingProxyType
from typing import Iterator, Mapping

from metadata.image import MetadataImage
from metadata.topic_configs import (
    TOPIC_CONFIGS,
    ConfigValidationError,
    broker_default_text,
    broker_synonyms,
    default_text,
    effective_topic_config,
    parse_broker_default,
    parse_topic_config,
)

_EMPTY: Mapping[str, str] = MappingProxyType({})


class ConfigSource(IntEnum):
    """Kafka's DescribeConfigs source numbers."""

    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


@dataclass(frozen=True)
class Synonym:
    """One place a topic config's value may come from."""

    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True)
class BrokerLayers:
    """The broker-level values a node's topics fall back to, by source."""

    node: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    cluster: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    static: Mapping[str, str] = field(default_factory=lambda: _EMPTY)

    @classmethod
    def from_image(cls, image: MetadataImage, node_id: int | None,
                   static: Mapping[str, str] = _EMPTY) -> BrokerLayers:
        """Node `node_id`'s layers: its dynamic configs and the cluster-wide default in
        `image`, over `static` (the properties file's broker-level topic defaults)."""
        node = _EMPTY if node_id is None else image.broker_config(node_id)
        return cls(node, image.broker_config(None), static)

    def sources(self) -> Iterator[tuple[ConfigSource, Mapping[str, str]]]:
        yield ConfigSource.DYNAMIC_BROKER_CONFIG, self.node
        yield ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, self.cluster
        yield ConfigSource.STATIC_BROKER_CONFIG, self.static


def _broker_chain(name: str, layers: BrokerLayers) -> Iterator[Synonym]:
    """The broker-level synonyms of topic config `name` set in `layers`, highest priority
    first. A value that does not parse is skipped, as Kafka's brokers drop a dynamic value
    they cannot apply (the controller refuses such values; older records may hold one)."""
    keys = broker_synonyms(name)
    for source, values in layers.sources():
        for key in keys:
            raw = values.get(key)
            if raw is None:
                continue
            try:
                parse_broker_default(name, key, raw)
            except ConfigValidationError:
                continue
            yield Synonym(key, raw, source)


def broker_topic_defaults(layers: BrokerLayers) -> dict[str, str]:
    """For each topic config, the one broker key (and its raw value) that supplies its
    default on this node; for `effective_topic_config(overrides, defaults)`."""
    defaults: dict[str, str] = {}
    for name in TOPIC_CONFIGS:
        winner = next(_broker_chain(name, layers), None)
        if winner is not None and winner.value is not None:
            defaults[winner.name] = winner.value
    return defaults


def resolve_topic_config(overrides: Mapping[str, str],
                         layers: BrokerLayers) -> dict[str, object]:
    """Every topic config's parsed value on this node (ConfigValidationError for an invalid
    override)."""
    return effective_topic_config(overrides, broker_topic_defaults(layers))


def resolve_topic_value(name: str, overrides: Mapping[str, str],
                        layers: BrokerLayers) -> object:
    """Topic config `name`'s parsed value on this node, resolving that one key only
    (ConfigValidationError for an invalid override)."""
    if name in overrides:
        return parse_topic_config(name, overrides[name])
    winner = next(_broker_chain(name, layers), None)
    if winner is not None and winner.value is not None:
        return parse_broker_default(name, winner.name, winner.value)
    default = TOPIC_CONFIGS[name].default
    return list(default) if isinstance(default, list) else default


def topic_config_synonyms(name: str, overrides: Mapping[str, str],
                          layers: BrokerLayers) -> list[Synonym]:
    """Where topic config `name`'s value may come from, highest priority first; the first
    is the source of its effective value. Ends with the defaults: those of its broker
    synonyms that have one, else the topic config's own."""
    chain: list[Synonym] = []
    if name in overrides:
        chain.append(Synonym(name, overrides[name], ConfigSource.DYNAMIC_TOPIC_CONFIG))
    chain.extend(_broker_chain(name, layers))
    keys = broker_synonyms(name)
    defaults = [Synonym(key, text, ConfigSource.DEFAULT_CONFIG) for key in keys
                if (text := broker_default_text(name, key)) is not None]
    if not defaults:
        defaults = [Synonym(name, default_text(name),
                            ConfigSource.DEFAULT_CONFIG)]
    chain.extend(defaults)
    return chain

