"""The broker settings consumer groups apply (Kafka's `group.consumer.*` keys)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from broker.group.consumer.assignors import CLASS_NAMES

if TYPE_CHECKING:
    from broker.config import ServerConfig

INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class ConsumerGroupSettings:
    """`enabled` is whether `group.coordinator.rebalance.protocols` lists "consumer";
    the first of `assignors` is the default one."""

    enabled: bool = True
    assignors: tuple[str, ...] = ("uniform", "range")
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = INT_MAX
    num_partitions: int = 50

    @classmethod
    def from_config(cls, config: "ServerConfig") -> "ConsumerGroupSettings":
        protocols = cast(list, config.get("group.coordinator.rebalance.protocols"))
        assignors = cast(list, config.get("group.consumer.assignors"))
        return cls(enabled="consumer" in protocols,
                   assignors=tuple(CLASS_NAMES.get(name, name) for name in assignors),
                   session_timeout_ms=cast(int, config.get("group.consumer.session.timeout.ms")),
                   heartbeat_interval_ms=cast(
                       int, config.get("group.consumer.heartbeat.interval.ms")),
                   max_size=cast(int, config.get("group.consumer.max.size")),
                   num_partitions=config.offsets_topic_num_partitions)
