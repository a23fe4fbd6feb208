"""ConnectionQuotas: Kafka's connection limits by listener, by server and by address."""

from __future__ import annotations

import trio
import trio.testing

from broker.network.connection_quotas import ConnectionQuotas


def test_per_address_limit_and_its_override() -> None:
    quotas = ConnectionQuotas(["PLAINTEXT"], max_per_ip=2, per_ip_overrides={"10.0.0.9": 3})
    assert [quotas.add("PLAINTEXT", "10.0.0.1") for _ in range(3)] == [True, True, False]
    assert [quotas.add("PLAINTEXT", "10.0.0.9") for _ in range(4)] == [True] * 3 + [False]
    assert quotas.total == 5 and quotas.count("10.0.0.1") == 2
    quotas.remove("PLAINTEXT", "10.0.0.1")
    assert quotas.add("PLAINTEXT", "10.0.0.1")


def test_zero_per_address_limit_refuses_all_but_the_overridden() -> None:
    quotas = ConnectionQuotas(["PLAINTEXT"], max_per_ip=0, per_ip_overrides={"10.0.0.9": 1})
    assert not quotas.add("PLAINTEXT", "10.0.0.1")
    assert quotas.add("PLAINTEXT", "10.0.0.9")


def test_server_and_listener_limits_hold_new_connections_back() -> None:
    quotas = ConnectionQuotas(["A", "B"], max_connections=3, per_listener={"A": 1})
    assert quotas.slot_available("A")
    quotas.add("A", "10.0.0.1")
    assert not quotas.slot_available("A"), "listener.name.a.max.connections ignored"
    quotas.add("B", "10.0.0.1")
    quotas.add("B", "10.0.0.2")
    assert not quotas.slot_available("B"), "max.connections ignored"
    quotas.remove("B", "10.0.0.2")
    assert quotas.slot_available("B") and not quotas.slot_available("A")


def test_inter_broker_listener_is_exempt_from_max_connections_when_not_alone() -> None:
    quotas = ConnectionQuotas(["CLIENT", "INTERNAL"], max_connections=1,
                              inter_broker_listener="INTERNAL")
    quotas.add("CLIENT", "10.0.0.1")
    assert not quotas.slot_available("CLIENT")
    assert quotas.slot_available("INTERNAL")
    quotas.add("INTERNAL", "10.0.0.2")
    assert quotas.over_limit
    alone = ConnectionQuotas(["INTERNAL"], max_connections=1, inter_broker_listener="INTERNAL")
    alone.add("INTERNAL", "10.0.0.2")
    assert not alone.slot_available("INTERNAL")


async def test_waiting_for_a_slot_ends_when_a_connection_closes() -> None:
    quotas = ConnectionQuotas(["A"], max_connections=1)
    quotas.add("A", "10.0.0.1")
    freed = trio.Event()

    async def wait() -> None:
        await quotas.wait_for_slot("A")
        freed.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait)
        await trio.testing.wait_all_tasks_blocked()
        assert not freed.is_set()
        quotas.remove("A", "10.0.0.1")
        with trio.fail_after(1):
            await freed.wait()
