"""Quota accounting: Kafka's sliding-window rate, throttle times, shared user-level windows,
and enforcement on a router (request time, muting)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import trio

from broker.apis.client_quota_enforcement import ClientQuotaEnforcement
from broker.apis.request import ConnectionContext, RequestRouter
from broker.quota.manager import ClientQuotaManager, ClientQuotas
from broker.quota.muting import THROTTLED_UNTIL
from broker.quota.rate import SampledRate, throttle_time_ms
from clients.protocol import ApiKey
from clients.protocol.messages.describe_groups import DescribeGroupsResponseData
from clients.protocol.messages.end_txn import EndTxnResponseData
from metadata.client_quotas import CLIENT_ID, USER, entity_of
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


# --- enforcement on a router: request time, and the connection muted ----------------------


@dataclass
class _Request:
    api_key: int
    client_id: str | None
    api_version: int = 0
    correlation_id: int = 1
    header_version: int = 1
    body: dict = field(default_factory=dict)


def _router(image: MetadataImage) -> RequestRouter:
    router = RequestRouter()

    async def busy(request: object, ctx: object) -> DescribeGroupsResponseData:
        # 50 ms of running, with a yield in between: both steps count. Answered with a
        # message, as the typed handlers do.
        for _ in range(2):
            end = time.perf_counter() + 0.025
            while time.perf_counter() < end:
                pass
            await trio.lowlevel.checkpoint()
        return DescribeGroupsResponseData()

    async def idle(request: object, ctx: object) -> dict:
        await trio.sleep(0.1)  # waiting is not request time
        return {"throttle_time_ms": 0, "error_code": 0}

    async def busy_typed(request: object, ctx: object) -> EndTxnResponseData:
        await busy(request, ctx)
        return EndTxnResponseData()

    router.register(ApiKey.DESCRIBE_GROUPS, busy)
    router.register(ApiKey.LIST_GROUPS, idle)
    router.register(ApiKey.END_TXN, busy_typed)
    ClientQuotaEnforcement(ClientQuotas(lambda: image, samples=2)).install(router)
    return router


async def test_request_time_over_request_percentage_is_throttled_and_muted() -> None:
    image = _image({((CLIENT_ID, "busy"),): {"request_percentage": 1.0}})
    router = _router(image)
    connection = ConnectionContext(1, "PLAINTEXT", "PLAINTEXT", ("127.0.0.1", 1))
    body = await router.dispatch(_Request(ApiKey.DESCRIBE_GROUPS, "busy"), connection)
    # 50 ms in a one-second window is 5% of a second per second, against 1%.
    assert 0 < body.throttle_time_ms <= 1000
    assert connection.scratch[THROTTLED_UNTIL] > trio.current_time()


async def test_a_typed_response_over_request_percentage_carries_the_throttle() -> None:
    image = _image({((CLIENT_ID, "busy"),): {"request_percentage": 1.0}})
    connection = ConnectionContext(1, "PLAINTEXT", "PLAINTEXT", ("127.0.0.1", 1))
    body = await _router(image).dispatch(_Request(ApiKey.END_TXN, "busy"), connection)
    assert isinstance(body, EndTxnResponseData)
    assert 0 < body.throttle_time_ms <= 1000


async def test_waiting_is_not_request_time_and_unquoted_clients_run_free() -> None:
    image = _image({((CLIENT_ID, "idle"),): {"request_percentage": 1.0}})
    router = _router(image)
    connection = ConnectionContext(1, "PLAINTEXT", "PLAINTEXT", ("127.0.0.1", 1))
    body = await router.dispatch(_Request(ApiKey.LIST_GROUPS, "idle"), connection)
    assert body["throttle_time_ms"] == 0
    body = await router.dispatch(_Request(ApiKey.DESCRIBE_GROUPS, "other"), connection)
    assert body.throttle_time_ms == 0
    assert THROTTLED_UNTIL not in connection.scratch
