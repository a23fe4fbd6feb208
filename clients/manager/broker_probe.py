"""Whether each broker answers: a connection of its own to the broker (TCP, then TLS and
SASL as configured, then ApiVersions), so that a broker that accepts connections but never
answers is named by the page, whatever the admin client's shared connections wait on."""

from __future__ import annotations

from typing import Iterable

import trio

from clients.admin import AdminConfig, BrokerNode
from clients.manager.reach import UNREACHABLE, broker_name, detail, silent_broker_line
from clients.net import KafkaConnection
from clients.protocol import KafkaError

# The connection's own timeouts come after the probe's, whose words the banner uses.
_LATER_S = 1.0


async def probe_brokers(config: AdminConfig, brokers: Iterable[BrokerNode],
                        deadline: float) -> dict[int, str]:
    """{broker id: banner line} of each broker that could not be reached, or did not
    answer within the client's connection timeout or by ``deadline`` (trio time)."""
    failures: dict[int, str] = {}
    timeout_s = config.connect_timeout_ms / 1000

    async def probe(broker: BrokerNode) -> None:
        started = trio.current_time()
        with trio.move_on_at(min(deadline, started + timeout_s)):
            try:
                conn = await KafkaConnection.connect(
                    broker.host, broker.port, config.client_id, timeout_s + _LATER_S,
                    security=config.security, sasl=config.sasl)
            except KafkaError:
                return  # an error answer (SASL refused) is an answer
            except UNREACHABLE as exc:
                failures[broker.node_id] = f"{broker_name(broker)} unreachable: {detail(exc)}"
                return
            await conn.aclose()
            return
        failures[broker.node_id] = silent_broker_line(broker, trio.current_time() - started)

    async with trio.open_nursery() as nursery:
        for broker in brokers:
            nursery.start_soon(probe, broker)
    return failures
