"""Broker-level topic defaults changed at runtime (Kafka's DynamicLogConfig): new values of
`log.retention.ms`, `log.segment.bytes`, ... reach every local log whose topic does not
override them."""

from __future__ import annotations

import logging
from typing import Mapping

from broker.config.log_defaults import log_default_keys
from broker.replica.manager import ReplicaManager
from metadata.image import MetadataImage

logger = logging.getLogger(__name__)


class DynamicLogDefaults:
    """A DynamicBrokerConfig listener that re-derives each local log's config."""

    def __init__(self, replicas: ReplicaManager) -> None:
        self._replicas = replicas
        self._applied = dict(replicas.broker_log_defaults)

    def __call__(self, values: Mapping[str, str], image: MetadataImage) -> None:
        keys = log_default_keys()
        defaults = {k: v for k, v in values.items() if k in keys}
        if defaults == self._applied:
            return
        self._applied = defaults
        replicas = self._replicas
        replicas.broker_log_defaults = dict(defaults)
        replicas.log_manager.broker_defaults = dict(defaults)
        topics = {log.topic for log in replicas.log_manager.logs()}
        for topic in sorted(topics):
            if image.topic(topic) is None:
                continue
            try:
                replicas.log_manager.update_topic_config(topic, image.topic_config(topic))
            except ValueError:
                logger.exception("cannot apply the new broker log defaults to topic %s", topic)
        logger.info("applied new broker log defaults to %d topic(s)", len(topics))
