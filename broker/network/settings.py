"""The network server's limits."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:
    from broker.config import ServerConfig

INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class ServerSettings:
    """Network limits; `from_config` maps Kafka's keys onto them."""

    max_request_bytes: int = 104857600
    # Array elements one request may name in all (raftka.socket.request.max.elements).
    max_request_elements: int = 200_000
    idle_timeout_s: float = 600.0
    # From a frame's first byte to its last (raftka.socket.request.read.timeout.ms).
    request_read_timeout_s: float = 30.0
    max_connections: int = INT_MAX
    max_connections_per_ip: int = INT_MAX
    # Per peer address (max.connections.per.ip.overrides, host names resolved).
    max_connections_per_ip_overrides: Mapping[str, int] = field(default_factory=dict)
    # Per listener name (listener.name.<name>.max.connections).
    max_connections_per_listener: Mapping[str, int] = field(default_factory=dict)
    # Kafka's protected listener: the inter-broker one, exempt from max.connections while
    # another listener exists (a connection beyond it closes the least recently active
    # connection of another listener).
    inter_broker_listener: str | None = None
    # Requests read and not yet handled, and their bytes (<= 0: unbounded).
    queued_max_requests: int = 500
    queued_max_request_bytes: int = 209715200
    max_in_flight_per_connection: int = 32
    shutdown_grace_s: float = 10.0
    # How long a connection that failed SASL authentication stays open after its answer
    # (Kafka's connection.failed.authentication.delay.ms, KIP-306), unless the client
    # closes first: it slows password guessing and lets the client read the answer.
    failed_authentication_delay_s: float = 0.1
    # SO_SNDBUF of accepted connections and SO_RCVBUF of listening sockets (which accepted
    # ones inherit); -1 leaves the OS default and its autotuning.
    send_buffer_bytes: int = -1
    receive_buffer_bytes: int = -1

    @classmethod
    def from_config(cls, config: "ServerConfig") -> "ServerSettings":
        limits = config.network_limits
        idle_ms = config.connections_max_idle_ms
        return cls(
            max_request_bytes=config.socket_request_max_bytes,
            max_request_elements=limits.request_max_elements,
            idle_timeout_s=math.inf if idle_ms < 0 else idle_ms / 1000.0,
            request_read_timeout_s=limits.request_read_timeout_ms / 1000.0,
            max_connections=config.max_connections,
            max_connections_per_ip=limits.max_connections_per_ip,
            max_connections_per_ip_overrides=limits.per_ip_overrides,
            max_connections_per_listener=limits.per_listener,
            inter_broker_listener=config.inter_broker_listener_name or None,
            queued_max_requests=limits.queued_max_requests,
            queued_max_request_bytes=limits.queued_max_request_bytes,
            shutdown_grace_s=limits.shutdown_grace_s,
            failed_authentication_delay_s=int(
                config.get("connection.failed.authentication.delay.ms")) / 1000.0,  # type: ignore[call-overload]
            send_buffer_bytes=config.socket_send_buffer_bytes,
            receive_buffer_bytes=config.socket_receive_buffer_bytes,
        )
