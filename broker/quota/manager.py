"""Per-broker client quota accounting: which quota applies to a request's (user, client-id)
and how long the client must be throttled after it.

Each quota type (produce bytes, fetch bytes, request time) keeps one sliding-window rate per
(user, client-id) pair the matched quota level names; clients that share a user-level quota
share its window. With no quota in the metadata, recording costs one dictionary check.
"""

from __future__ import annotations

import time
from typing import Callable

from broker.quota.rate import SampledRate, throttle_time_ms
from metadata.client_quotas import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    ResolvedQuota,
    quota_user,
    resolve_quota,
)
from metadata.image import MetadataImage

# Kafka drops a client's quota sensors after an hour without traffic.
SENSOR_EXPIRY_MS = 3_600_000


class ClientQuotaManager:
    """Quota accounting of one quota key (`producer_byte_rate`, ...)."""

    def __init__(self, key: str, image: Callable[[], MetadataImage], *, samples: int = 11,
                 window_ms: int = 1000, max_throttle_ms: int | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.key = key
        self._image = image
        self._samples = samples
        self._window_ms = window_ms
        self._max_throttle_ms = max_throttle_ms
        self._clock = clock
        self._rates: dict[tuple[str, str], SampledRate] = {}
        self._resolved: dict[tuple[str, str], ResolvedQuota | None] = {}
        self._resolved_for: object = None
        self._last_expiry_ms = 0

    def quota(self, principal: str, client_id: str | None) -> ResolvedQuota | None:
        """The quota of this key that applies to the client (None: unlimited)."""
        quotas = self._image().client_quotas
        if not quotas:
            return None
        if self._resolved_for is not quotas:
            self._resolved, self._resolved_for = {}, quotas
        pair = (quota_user(principal), client_id or "")
        if pair not in self._resolved:
            self._resolved[pair] = resolve_quota(quotas, self.key, *pair)
        return self._resolved[pair]

    def max_value_in_window(self, principal: str, client_id: str | None) -> float | None:
        """The most a client may use at once (quota x the window's full samples); None:
        unlimited. Kafka caps a consumer's fetch size with it."""
        quota = self.quota(principal, client_id)
        if quota is None:
            return None
        return quota.bound * max(self._samples - 1, 1) * self._window_ms / 1000

    def any_quota(self) -> bool:
        """Whether any entity has a quota of this key."""
        return any(self.key in values for values in self._image().client_quotas.values())

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def record(self, principal: str, client_id: str | None, value: float) -> int:
        """Add `value` to the client's window; the throttle time in ms (0: within quota)."""
        quota = self.quota(principal, client_id)
        if quota is None:
            return 0
        now = self._now_ms()
        self._expire(now)
        rate = self._rates.get((quota.user, quota.client_id))
        if rate is None:
            rate = self._rates[(quota.user, quota.client_id)] = SampledRate(
                self._samples, self._window_ms)
        rate.record(value, now)
        throttle = throttle_time_ms(rate.measure(now), quota.bound, rate.window_size_ms(now))
        if self._max_throttle_ms is not None:
            throttle = min(throttle, self._max_throttle_ms)
        return throttle

    def unrecord(self, principal: str, client_id: str | None, value: float) -> None:
        """Take back a recorded `value` (a throttled fetch returns no data)."""
        quota = self.quota(principal, client_id)
        rate = None if quota is None else self._rates.get((quota.user, quota.client_id))
        if rate is not None:
            rate.record(-value, self._now_ms())

    def _expire(self, now_ms: int) -> None:
        if now_ms - self._last_expiry_ms < SENSOR_EXPIRY_MS // 60:
            return
        self._last_expiry_ms = now_ms
        for pair, rate in list(self._rates.items()):
            if now_ms - rate.last_record_ms > SENSOR_EXPIRY_MS:
                del self._rates[pair]


class ClientQuotas:
    """The three client quota managers of a broker."""

    def __init__(self, image: Callable[[], MetadataImage], *, samples: int = 11,
                 window_seconds: int = 1, clock: Callable[[], float] = time.monotonic) -> None:
        window_ms = window_seconds * 1000
        self.produce = ClientQuotaManager(PRODUCER_BYTE_RATE, image, samples=samples,
                                          window_ms=window_ms, clock=clock)
        self.fetch = ClientQuotaManager(CONSUMER_BYTE_RATE, image, samples=samples,
                                        window_ms=window_ms, clock=clock)
        # Request time throttling is bounded by one window, as in Kafka.
        self.request = ClientQuotaManager(REQUEST_PERCENTAGE, image, samples=samples,
                                          window_ms=window_ms, max_throttle_ms=window_ms,
                                          clock=clock)
