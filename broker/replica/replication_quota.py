"""Replication throttles (Kafka's ReplicationQuotaManager): a byte rate over a sliding window
of samples, and the partitions it applies to on this broker.

A leader stops serving throttled partitions to followers outside the ISR while its rate is
over `leader.replication.throttled.rate`; a follower stops fetching its throttled partitions
while over `follower.replication.throttled.rate`. Bytes are counted per fetched partition
blob, never per record.

Kafka's Rate assumes at least `window.num - 1` elapsed windows, which lets a fresh throttle
pass that many seconds' worth of bytes at once; here the elapsed time runs from the first
byte still in the window, so a throttled transfer never beats size/rate by more than one
fetch.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Mapping

if TYPE_CHECKING:
    from metadata.image import MetadataImage

logger = logging.getLogger(__name__)

LONG_MAX = 2**63 - 1
ALL_REPLICAS = "*"
_MIN_ELAPSED_S = 0.001


class ThrottledReplicasError(ValueError):
    """A `*.replication.throttled.replicas` value that is neither "*" nor
    "partition:broker,..."."""


def parse_throttled_replicas(value: str | Iterable[str]) -> list[tuple[int, int]] | None:
    """(partition, broker) pairs of a throttled-replicas config; None for "*" (all)."""
    items = [i.strip() for i in (value.split(",") if isinstance(value, str) else value)]
    items = [i for i in items if i]
    if items == [ALL_REPLICAS]:
        return None
    pairs = []
    for item in items:
        partition, sep, broker = item.partition(":")
        if not sep or not partition.strip().isdigit() or not broker.strip().isdigit():
            raise ThrottledReplicasError(
                f"{item!r} is not [partitionId]:[brokerId]; the value must be a list of "
                f"them separated by commas, or the wildcard '*'")
        pairs.append((int(partition), int(broker)))
    return pairs


class SlidingRate:
    """Bytes per second over the last `samples * sample_seconds` seconds."""

    def __init__(self, samples: int = 11, sample_seconds: float = 1.0) -> None:
        self._samples = max(samples, 1)
        self._sample_s = sample_seconds
        # [start time, bytes] per sample; a sample starts with its first record.
        self._window: deque[list[float]] = deque()

    def _purge(self, now: float) -> None:
        horizon = now - self._samples * self._sample_s
        while self._window and self._window[0][0] + self._sample_s <= horizon:
            self._window.popleft()

    def record(self, size: int, now: float) -> None:
        self._purge(now)
        if self._window and now < self._window[-1][0] + self._sample_s:
            self._window[-1][1] += size
        else:
            self._window.append([now, float(size)])
            if len(self._window) > self._samples:
                self._window.popleft()

    def rate(self, now: float) -> float:
        self._purge(now)
        if not self._window:
            return 0.0
        total = sum(sample[1] for sample in self._window)
        return total / max(now - self._window[0][0], _MIN_ELAPSED_S)

    def seconds_until_within(self, limit: float, now: float) -> float:
        """How long until the rate falls to `limit` with nothing more recorded."""
        self._purge(now)
        if not self._window:
            return 0.0
        if limit <= 0:
            return self._samples * self._sample_s
        total = sum(sample[1] for sample in self._window)
        return max(self._window[0][0] + total / limit - now, 0.0)


@dataclass
class _Throttled:
    """The partitions of one topic throttled on this broker (None: all of them)."""

    partitions: frozenset[int] | None


class ReplicationQuota:
    """One direction's throttle (leader or follower) on broker `broker_id`."""

    def __init__(self, broker_id: int, samples: int = 11, sample_seconds: float = 1.0) -> None:
        self.broker_id = broker_id
        self.rate_limit = LONG_MAX
        self._rate = SlidingRate(samples, sample_seconds)
        self._topics: dict[str, _Throttled] = {}
        # True only when some partition is throttled and the rate is bounded: the hot path
        # checks this one attribute and nothing else otherwise.
        self.active = False

    def update(self, rate_limit: int, throttled: Mapping[str, list[tuple[int, int]] | None]
               ) -> None:
        """New limit and topic -> throttled (partition, broker) pairs (None: all)."""
        self.rate_limit = rate_limit
        topics = {}
        for topic, pairs in throttled.items():
            if pairs is None:
                topics[topic] = _Throttled(None)
                continue
            mine = frozenset(p for p, b in pairs if b == self.broker_id)
            if mine:
                topics[topic] = _Throttled(mine)
        self._topics = topics
        self.active = bool(topics) and rate_limit < LONG_MAX

    def is_throttled(self, topic: str, partition: int) -> bool:
        entry = self._topics.get(topic)
        return entry is not None and (entry.partitions is None or partition in entry.partitions)

    def is_exceeded(self, now: float) -> bool:
        return self._rate.rate(now) > self.rate_limit

    def record(self, size: int, now: float) -> None:
        self._rate.record(size, now)

    def seconds_until_within(self, now: float) -> float:
        return self._rate.seconds_until_within(float(self.rate_limit), now)

    def rate(self, now: float) -> float:
        return self._rate.rate(now)


@dataclass
class ReplicationQuotas:
    """The leader and follower throttles of one broker."""

    leader: ReplicationQuota
    follower: ReplicationQuota

    @classmethod
    def for_broker(cls, broker_id: int, samples: int = 11,
                   sample_seconds: float = 1.0) -> ReplicationQuotas:
        return cls(ReplicationQuota(broker_id, samples, sample_seconds),
                   ReplicationQuota(broker_id, samples, sample_seconds))


LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"


def _throttled_topics(image: "MetadataImage", key: str
                      ) -> dict[str, list[tuple[int, int]] | None]:
    out: dict[str, list[tuple[int, int]] | None] = {}
    for topic in image.topics_by_name:
        value = image.topic_config(topic).get(key)
        if not value:
            continue
        try:
            out[topic] = parse_throttled_replicas(value)
        except ThrottledReplicasError as exc:
            logger.warning("topic %s: ignoring %s: %s", topic, key, exc)
    return out


def apply_throttle_config(quotas: ReplicationQuotas, values: Mapping[str, str],
                          image: "MetadataImage") -> None:
    """A DynamicBrokerConfig listener: the rates from the broker configs, the throttled
    replicas from the topic configs."""
    quotas.leader.update(int(values.get(LEADER_RATE, LONG_MAX)),
                         _throttled_topics(image, LEADER_REPLICAS))
    quotas.follower.update(int(values.get(FOLLOWER_RATE, LONG_MAX)),
                           _throttled_topics(image, FOLLOWER_REPLICAS))
