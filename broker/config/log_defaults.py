"""Broker-level defaults of topic configs (`log.segment.bytes`, `log.retention.hours`, ...).

The table lives in `metadata.topic_configs`; it is imported lazily so this package keeps
working (without these keys) while that module is absent.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache

from broker.config.compression_type import codec_problem
from broker.config.definitions import ConfigKey
from broker.config.errors import ConfigError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LogDefaultKey:
    """A broker key that supplies the default of `topic_config`."""

    key: ConfigKey
    topic_config: str


@lru_cache(maxsize=1)
def log_default_keys() -> dict[str, LogDefaultKey]:
    """Broker synonym key -> definition; empty when `metadata.topic_configs` is missing."""
    try:
        from metadata import topic_configs
    except ImportError:
        logger.debug("metadata.topic_configs not available; no broker log defaults")
        return {}
    result: dict[str, LogDefaultKey] = {}
    for name, definition in topic_configs.TOPIC_CONFIGS.items():
        for synonym in topic_configs.broker_synonyms(name):
            default = topic_configs.broker_default_text(name, synonym)
            result[synonym] = LogDefaultKey(
                ConfigKey(synonym, definition.type, default, definition.doc), name)
    return result


@lru_cache(maxsize=1)
def dynamic_log_default_keys() -> frozenset[str]:
    """The broker log defaults that may change at runtime (Kafka's
    DynamicLogConfig.ReconfigurableConfigs): each topic config's first broker synonym, so
    `log.retention.ms` and `log.roll.ms` but not `log.retention.hours` or `log.roll.hours`."""
    try:
        from metadata import topic_configs
    except ImportError:
        return frozenset()
    return frozenset(synonyms[0] for name in topic_configs.TOPIC_CONFIGS
                     if (synonyms := topic_configs.broker_synonyms(name)))


def validate_log_defaults(raw: dict[str, str]) -> None:
    """Check each broker log default through the topic config rules; errors name the key."""
    if not raw:
        return
    from metadata import topic_configs

    for key, value in raw.items():
        try:
            topic_configs.effective_topic_config({}, {key: value})
        except topic_configs.ConfigValidationError as exc:
            raise ConfigError(key, str(exc)) from None
        # A configured codec the broker cannot write stops start-up (topics inherit it).
        problem = codec_problem(value.strip()) if key == "compression.type" else None
        if problem is not None:
            raise ConfigError(key, problem)
