"""Quota accounting: Kafka's sliding-window rate, throttle times, shared user-level windows."""

from __future__ import annotations

from metadata.client_quotas import CLIENT_ID, USER, entity_of
from broker.quota.manager import ClientQuotaManager
from broker.quota.rate import SampledRate, throttle_time_ms
from metadata.image import MetadataImage, frozen_map


def test_a_fresh_rate_divides_by_at_least_samples_minus_one_windows() -> None:
    rate = SampledRate(samples=11, window_ms=1000)
    rate.record(10_000, now_ms=5_000)
    assert rate.window_size_ms(5_000) == 10_000
    assert rate.measure(5_000) == 1_000.0


def test_old_samples_leave_the_window() -> None:
    rate = SampledRate(samples=3, window_ms=1000)
    rate.record(3_000, now_ms=0)
    rate.record(3_000, now_ms=10_000)
    # The first sample is older than three windows: only the second counts.
    assert rate.measure(10_000) == 3_000 / 2


def test_throttle_time_is_the_excess_share_of_the_window() -> None:
    assert throttle_time_ms(1_500.0, 1_000.0, 10_000) == 5_000
    assert throttle_time_ms(900.0, 1_000.0, 10_000) == 0


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _image(quotas: dict) -> MetadataImage:
    return MetadataImage(client_quotas=frozen_map(
        {entity_of(e): frozen_map(v) for e, v in quotas.items()}))


def test_within_quota_no_throttle_over_it_throttled() -> None:
    clock = Clock()
    image = _image({((CLIENT_ID, "app"),): {"producer_byte_rate": 1_000.0}})
    manager = ClientQuotaManager("producer_byte_rate", lambda: image, clock=clock)
    assert manager.record("User:ANONYMOUS", "app", 5_000) == 0
    # 15 kB within the first (10 s minimum) window: 1.5 kB/s against 1 kB/s.
    assert manager.record("User:ANONYMOUS", "app", 10_000) == 5_000
    # Other clients have no quota at all.
    assert manager.record("User:ANONYMOUS", "other", 10**9) == 0


def test_clients_of_a_user_level_quota_share_one_window() -> None:
    clock = Clock()
    image = _image({((USER, "alice"),): {"producer_byte_rate": 1_000.0}})
    manager = ClientQuotaManager("producer_byte_rate", lambda: image, clock=clock)
    assert manager.record("User:alice", "a", 9_000) == 0
    assert manager.record("User:alice", "b", 6_000) == 5_000
    assert manager.record("User:bob", "b", 6_000) == 0


def test_no_quotas_costs_nothing_and_never_throttles() -> None:
    image = MetadataImage.empty()
    manager = ClientQuotaManager("producer_byte_rate", lambda: image)
    assert manager.record("User:alice", "a", 10**12) == 0
    assert manager.quota("User:alice", "a") is None
