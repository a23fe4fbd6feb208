"""Broker-level topic defaults changed at runtime (Kafka's DynamicLogConfig): new values of
`min.insync.replicas`, `log.retention.ms`, `compression.type`, ... set for this broker or as
the cluster-wide default reach every existing local partition whose topic does not override
them, at once."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Mapping

from broker.replica.manager import ReplicaManager
from metadata.image import MetadataImage
from metadata.topic_config_layers import BrokerLayers, broker_topic_defaults

if TYPE_CHECKING:
    from broker.config import ServerConfig

logger = logging.getLogger(__name__)


class DynamicLogDefaults:
    """A DynamicBrokerConfig listener that re-derives each local partition's topic config
    when this node's broker-level topic defaults change."""

    def __init__(self, replicas: ReplicaManager, config: "ServerConfig") -> None:
        self._replicas = replicas
        self._node_id = config.node_id
        self._static = config.log_defaults()
        self._applied = broker_topic_defaults(BrokerLayers(static=self._static))

    def __call__(self, values: Mapping[str, str], image: MetadataImage) -> None:
        defaults = broker_topic_defaults(
            BrokerLayers.from_image(image, self._node_id, self._static))
        if defaults == self._applied:
            return
        changed = sorted(k for k in defaults.keys() | self._applied.keys()
                         if defaults.get(k) != self._applied.get(k))
        self._applied = defaults
        self._replicas.apply_broker_topic_defaults(defaults, image)
        logger.info("applied new broker log defaults (%s) to %d partition(s)",
                    ", ".join(changed), len(self._replicas.partitions()))
