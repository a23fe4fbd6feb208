"""The follower fetch settings, with Kafka's names and defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from clients.net import PLAINTEXT, ClientSecurity
from clients.net.sasl import SaslCredentials

if TYPE_CHECKING:
    from broker.config import ServerConfig


@dataclass(frozen=True)
class FetcherSettings:
    """`replica.fetch.*` and the listener followers reach leaders on."""

    listener_name: str = "PLAINTEXT"
    max_bytes: int = 1_048_576            # replica.fetch.max.bytes (per partition)
    response_max_bytes: int = 10_485_760  # replica.fetch.response.max.bytes
    max_wait_ms: int = 500                # replica.fetch.wait.max.ms
    min_bytes: int = 1                    # replica.fetch.min.bytes
    backoff_ms: int = 1_000               # replica.fetch.backoff.ms
    socket_timeout_ms: int = 30_000       # replica.socket.timeout.ms
    receive_buffer_bytes: int = -1        # replica.socket.receive.buffer.bytes (-1: OS's)
    local_address: str | None = None      # raftka.client.bind.address
    # How the inter-broker listener is reached (its security protocol, TLS context).
    security: ClientSecurity = PLAINTEXT
    # On a SASL inter-broker listener: sasl.mechanism.inter.broker.protocol and the
    # listener's JAAS username and password.
    sasl: SaslCredentials | None = None

    @classmethod
    def from_config(cls, config: "ServerConfig") -> FetcherSettings:
        return cls(listener_name=config.inter_broker_listener_name,
                   max_bytes=config.replica_fetch_max_bytes,
                   response_max_bytes=config.replica_fetch_response_max_bytes,
                   max_wait_ms=config.replica_fetch_wait_max_ms,
                   min_bytes=config.replica_fetch_min_bytes,
                   backoff_ms=config.replica_fetch_backoff_ms,
                   receive_buffer_bytes=config.replica_socket_receive_buffer_bytes,
                   local_address=config.client_bind_address,
                   security=config.inter_broker_security,
                   sasl=inter_broker_sasl(config))


def inter_broker_sasl(config: "ServerConfig") -> SaslCredentials | None:
    """The credentials a broker authenticates to other brokers with (None without SASL)."""
    credentials: SaslCredentials | None = getattr(config, "inter_broker_sasl", None)
    return credentials
