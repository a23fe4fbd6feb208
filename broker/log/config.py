"""A partition's effective topic config as typed attributes."""

from __future__ import annotations

import random
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from broker.log.segment import SegmentSettings
from metadata.topic_configs import effective_topic_config

PRODUCER_ID_EXPIRATION_MS = 86_400_000  # Kafka's producer.id.expiration.ms


@dataclass(frozen=True)
class LogConfig:
    """The topic configs the log acts on, parsed (see metadata.topic_configs)."""

    cleanup_policy: tuple[str, ...] = ("delete",)
    compression_type: str = "producer"
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    delete_retention_ms: int = 86_400_000
    file_delete_delay_ms: int = 60_000
    flush_messages: int = 2**63 - 1
    flush_ms: int = 2**63 - 1
    index_interval_bytes: int = 4096
    max_compaction_lag_ms: int = 2**63 - 1
    max_message_bytes: int = 1_048_588
    message_timestamp_type: str = "CreateTime"
    message_timestamp_before_max_ms: int = 2**63 - 1
    message_timestamp_after_max_ms: int = 3_600_000
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    preallocate: bool = False
    retention_bytes: int = -1
    retention_ms: int = 604_800_000
    segment_bytes: int = 1_073_741_824
    segment_index_bytes: int = 10_485_760
    segment_jitter_ms: int = 0
    segment_ms: int = 604_800_000

    @classmethod
    def from_parsed(cls, values: Mapping[str, object]) -> LogConfig:
        """Build from effective_topic_config's output (extra keys are ignored)."""
        kwargs: dict[str, object] = {}
        for name in cls.__dataclass_fields__:
            key = name.replace("_", ".")
            if key in values:
                value = values[key]
                kwargs[name] = tuple(value) if isinstance(value, list) else value  # type: ignore[arg-type]
        return cls(**kwargs)  # type: ignore[arg-type]

    @classmethod
    def from_overrides(
        cls, overrides: Mapping[str, str] = MappingProxyType({}),
        broker_defaults: Mapping[str, str] = MappingProxyType({}),
    ) -> LogConfig:
        """Topic overrides over broker defaults over Kafka's defaults."""
        return cls.from_parsed(effective_topic_config(overrides, broker_defaults))

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    def segment_settings(self) -> SegmentSettings:
        return SegmentSettings(self.index_interval_bytes, self.segment_index_bytes,
                               self.preallocate, self.segment_bytes)

    def random_jitter_ms(self) -> int:
        """Per-segment roll jitter, as Kafka draws it."""
        if self.segment_jitter_ms <= 0:
            return 0
        return random.randrange(min(self.segment_jitter_ms, self.segment_ms))
