"""Dynamic broker configs (Kafka's DynamicBrokerConfig): which server keys may change at
runtime, their effective values on this broker, and the parts told when they change.

A key's value comes from, highest priority first: this broker's dynamic config (ConfigRecord
on resource "<node.id>"), the cluster-wide dynamic default (resource ""), the static file,
the key's default.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable, Mapping

from broker.config.log_defaults import dynamic_log_default_keys
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage
from metadata.records import BROKER_RESOURCE

if TYPE_CHECKING:
    from broker.config import ServerConfig

logger = logging.getLogger(__name__)

# Kafka's dynamically updatable broker keys (DynamicBrokerConfig.AllDynamicConfigs) that
# Raftka defines, besides the broker-level topic defaults (log.retention.ms, ...), which
# Kafka's DynamicLogConfig makes dynamic too (`dynamic_log_default_keys`).
_DYNAMIC_SERVER_KEYS = frozenset({
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "log.cleaner.backoff.ms",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.load.factor",
    "log.cleaner.threads",
    "log.cleaner.io.max.bytes.per.second",
    "unclean.leader.election.enable",
})

Listener = Callable[[Mapping[str, str], MetadataImage], None]


def dynamic_broker_keys() -> frozenset[str]:
    """Every key IncrementalAlterConfigs and AlterConfigs may set on a broker resource."""
    return _DYNAMIC_SERVER_KEYS | dynamic_log_default_keys()


def dynamic_values(static: Mapping[str, str], image: MetadataImage,
                   node_id: int) -> dict[str, str]:
    """Raw values of the dynamic keys set anywhere (static file, cluster default, this
    broker), the most specific winning; keys set nowhere are absent."""
    keys = dynamic_broker_keys()
    values = {k: v for k, v in static.items() if k in keys}
    values.update((k, v) for k, v in image.broker_config(None).items() if k in keys)
    values.update((k, v) for k, v in image.broker_config(node_id).items() if k in keys)
    return values


class DynamicBrokerConfig:
    """Recomputes this broker's dynamic values when broker or topic configs change and
    hands them, with the image, to each subscriber."""

    def __init__(self, config: "ServerConfig") -> None:
        self._node_id = config.node_id
        self._static = config.originals()
        self._listeners: list[Listener] = []
        self.values: dict[str, str] = dynamic_values(self._static, MetadataImage(),
                                                     self._node_id)

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        # Topic config changes matter too: the throttled-replica lists are topic configs.
        if delta.changed_config_resources():
            self.apply(image)

    def apply(self, image: MetadataImage) -> None:
        """Recompute from `image` and tell every subscriber (also at start-up, for an
        image that already holds configs)."""
        values = dynamic_values(self._static, image, self._node_id)
        if values != self.values:
            changed = sorted(k for k in values.keys() | self.values.keys()
                             if values.get(k) != self.values.get(k))
            logger.info("dynamic broker configs changed: %s", ", ".join(changed))
        self.values = values
        for listener in self._listeners:
            try:
                listener(values, image)
            except ValueError:
                logger.exception("cannot apply dynamic broker configs")
