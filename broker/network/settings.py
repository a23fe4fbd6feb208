"""The network server's limits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.config import ServerConfig


@dataclass(frozen=True)
class ServerSettings:
    """Network limits; `from_config` maps Kafka's keys onto them."""

    max_request_bytes: int = 104857600
    idle_timeout_s: float = 600.0
    max_connections: int = 2**31 - 1
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
        return cls(
            max_request_bytes=config.socket_request_max_bytes,
            idle_timeout_s=config.connections_max_idle_ms / 1000.0,
            max_connections=config.max_connections,
            failed_authentication_delay_s=int(
                config.get("connection.failed.authentication.delay.ms")) / 1000.0,  # type: ignore[call-overload]
            send_buffer_bytes=config.socket_send_buffer_bytes,
            receive_buffer_bytes=config.socket_receive_buffer_bytes,
        )
