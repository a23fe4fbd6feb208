"""`raftka.metrics.listener`: where a node serves its Prometheus metrics."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from broker.config.errors import ConfigError

LISTENER_KEY = "raftka.metrics.listener"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_BASE_PORT = 9404
METRICS_PATH = "/metrics"


@dataclass(frozen=True)
class MetricsListener:
    host: str
    port: int

    def uri(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{METRICS_PATH}"


def default_metrics_port(node_id: int) -> int:
    """9404 for node 1, 9405 for node 2, ...: the node offset is `node.id - 1`."""
    return DEFAULT_BASE_PORT + node_id - 1


def parse_metrics_listener(value: str | None, node_id: int) -> MetricsListener | None:
    """The listener `raftka.metrics.listener` names: unset means
    http://127.0.0.1:(9404 + node.id - 1), empty disables the endpoint (None).
    ConfigError naming the key for anything but `http://HOST:PORT`."""
    if value is None:
        port = default_metrics_port(node_id)
        if not 0 < port <= 65535:
            raise ConfigError(LISTENER_KEY, f"the default port 9404 + node.id - 1 = {port} is "
                              f"not a valid port; set {LISTENER_KEY}")
        return MetricsListener(DEFAULT_HOST, port)
    text = value.strip()
    if not text:
        return None
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ConfigError(LISTENER_KEY, f"{text!r}: {exc}") from None
    if (parts.scheme != "http" or parts.hostname is None or port is None
            or parts.path not in ("", "/") or parts.query or parts.username):
        raise ConfigError(LISTENER_KEY, f"{text!r}: expected http://HOST:PORT "
                          f"(https is not supported)")
    return MetricsListener(parts.hostname, port)
