"""The admin client's configuration (Kafka's admin keys) and its choice of broker for a
call; shared by the trio and blocking clients."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from clients.admin import operations as ops
from clients.common.cluster import BrokerNode, ClusterMetadata
from clients.common.settings import (
    COMMON_KEYS,
    ConfigError,
    ClientConfigKey,
    at_least,
    client_security,
    parse_int,
    resolve_config,
    sasl_credentials_of,
)
from clients.net import PLAINTEXT, ClientSecurity, KafkaConnectionError, parse_bootstrap_servers
from clients.net.sasl import SaslCredentials


ADMIN_KEYS: tuple[ClientConfigKey, ...] = COMMON_KEYS + (
    ClientConfigKey("default.api.timeout.ms", parse_int, 60000, check=at_least(0)),
)


@dataclass(frozen=True)
class AdminConfig:
    bootstrap_servers: list[tuple[str, int]]
    client_id: str
    request_timeout_ms: int
    connect_timeout_ms: int
    default_api_timeout_ms: int
    security: ClientSecurity = PLAINTEXT
    sasl: SaslCredentials | None = None

    @classmethod
    def from_mapping(cls, given: Mapping[str, Any] | None = None,
                     **overrides: Any) -> AdminConfig:
        values = resolve_config(ADMIN_KEYS, given, overrides, "admin")
        try:
            servers = parse_bootstrap_servers(values["bootstrap.servers"])
        except ValueError as exc:
            raise ConfigError(f"invalid bootstrap.servers: {exc}") from None
        return cls(servers, values["client.id"], values["request.timeout.ms"],
                   values["socket.connection.setup.timeout.ms"],
                   values["default.api.timeout.ms"], client_security(values),
                   sasl_credentials_of(values))


def pick_target(cluster: ClusterMetadata, call: ops.Call,
                 connected: set[tuple[str, int]], avoid: set[int]) -> BrokerNode:
    """The named broker for a call that names one; the controller for controller calls;
    otherwise, like Kafka's least-loaded node, a broker already connected to (the bootstrap
    one, usually), then the lowest id. Brokers in `avoid` (one just failed) come last."""
    if not cluster.brokers:
        raise KafkaConnectionError("the cluster's Metadata lists no brokers")
    if call.node_id is not None:
        if call.node_id not in cluster.brokers:
            raise KafkaConnectionError(f"broker {call.node_id} is not in the cluster's "
                                       "Metadata")
        return cluster.brokers[call.node_id]
    if call.to_controller and cluster.controller_id in cluster.brokers:
        return cluster.brokers[cluster.controller_id]
    ranked = sorted(cluster.brokers.values(), key=lambda node: (
        node.node_id in avoid, (node.host, node.port) not in connected, node.node_id))
    return ranked[0]
