"""The network limits of a node (connections, request backlog, read and shutdown timeouts),
checked across keys as Kafka's KafkaConfig checks them; a bad value stops start-up naming the
key."""

from __future__ import annotations

import ipaddress
import logging
import re
import socket
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from broker.config.errors import ConfigError

logger = logging.getLogger(__name__)

PER_IP_KEY = "max.connections.per.ip"
OVERRIDES_KEY = "max.connections.per.ip.overrides"
LISTENER_MAX_CONNECTIONS = re.compile(r"^listener\.name\.([^.]+)\.max\.connections$")
# Kafka's Utils.validHostPattern.
_VALID_HOST = re.compile(r"^[0-9a-zA-Z\-%._:]*$")
# Of the shutdown timeout: the longest wait for the controller's agreement, and the grace of
# requests in flight when the listeners close.
CONTROLLED_SHUTDOWN_SHARE = 0.5
CONTROLLED_SHUTDOWN_MAX_S = 30.0
REQUEST_GRACE_SHARE = 0.25
REQUEST_GRACE_MAX_S = 10.0

Resolve = Callable[[str], Iterable[str]]


@dataclass(frozen=True)
class NetworkLimits:
    """The parsed and cross-checked network keys of one node."""

    max_connections_per_ip: int
    # Peer address (normalised, see `normalise_address`) -> its own limit.
    per_ip_overrides: Mapping[str, int]
    # Listener name -> listener.name.<name>.max.connections.
    per_listener: Mapping[str, int]
    request_read_timeout_ms: int
    request_max_elements: int
    queued_max_requests: int
    queued_max_request_bytes: int
    shutdown_timeout_ms: int

    @property
    def controlled_shutdown_timeout_s(self) -> float:
        """How long a broker waits for the controller to agree to its shutdown."""
        return min(CONTROLLED_SHUTDOWN_MAX_S,
                   self.shutdown_timeout_ms / 1000 * CONTROLLED_SHUTDOWN_SHARE)

    @property
    def shutdown_grace_s(self) -> float:
        """How long requests in flight may finish once the listeners close."""
        return min(REQUEST_GRACE_MAX_S, self.shutdown_timeout_ms / 1000 * REQUEST_GRACE_SHARE)


def normalise_address(address: str) -> str:
    """One spelling per address: IPv4-mapped IPv6 as IPv4, IPv6 compressed, no scope."""
    text = address.split("%", 1)[0]
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return ip.compressed


def parse_ip_overrides(text: str, key: str = OVERRIDES_KEY) -> dict[str, int]:
    """Kafka's `host:count,host:count` (a host name or an IP address; an IPv6 address splits
    at its last colon) as {host: count}."""
    overrides: dict[str, int] = {}
    text = text.strip()
    if not text:
        return overrides
    for entry in re.split(r"\s*,\s*", text):
        host, sep, count = entry.rpartition(":")
        host = host.strip()
        if not sep or not host:
            raise ConfigError(key, f"{entry!r} is not host:count")
        if not _VALID_HOST.match(host):
            raise ConfigError(key, f"{host!r} is not a valid host name or address")
        overrides[host] = _connection_count(key, count, f"{entry!r}: ")
    return overrides


def resolve_host(host: str) -> list[str]:
    """Every address `host` stands for (itself when it is one)."""
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    return sorted({str(info[4][0]) for info in infos})


def resolve_overrides(overrides: Mapping[str, int], key: str = OVERRIDES_KEY,
                      resolve: Resolve = resolve_host) -> dict[str, int]:
    """{address: count} for every address of every host named (Kafka resolves each host
    at start-up too); a host that does not resolve stops start-up."""
    resolved: dict[str, int] = {}
    for host, count in overrides.items():
        try:
            addresses = list(resolve(host))
        except OSError as exc:
            raise ConfigError(key, f"cannot resolve {host!r}: {exc}") from None
        for address in addresses:
            resolved[normalise_address(address)] = count
    return resolved


def listener_max_connections(originals: Mapping[str, str],
                             listener_names: Iterable[str]) -> dict[str, int]:
    """listener.name.<name>.max.connections by listener name; a key naming no listener is
    ignored with a warning, as unknown keys are."""
    names = {name.upper() for name in listener_names}
    limits: dict[str, int] = {}
    for key, raw in originals.items():
        match = LISTENER_MAX_CONNECTIONS.match(key)
        if match is None:
            continue
        name = match.group(1).upper()
        if name not in names:
            logger.warning("%s names no listener in listeners; ignored", key)
            continue
        limits[name] = _connection_count(key, raw)
    return limits


def _connection_count(key: str, text: str, where: str = "") -> int:
    """A connection limit: an integer from 0 to 2,147,483,647 (ConfigError naming `key`)."""
    try:
        value = int(text.strip(), 10)
    except ValueError:
        raise ConfigError(key, f"{where}{text.strip()!r} is not an integer") from None
    if not 0 <= value <= 2**31 - 1:
        raise ConfigError(key, f"{where}{value} is outside [0, 2147483647]")
    return value


def is_listener_network_key(key: str) -> bool:
    return LISTENER_MAX_CONNECTIONS.match(key) is not None


def network_limits(get: Callable[[str], object], originals: Mapping[str, str],
                   listener_names: Iterable[str], resolve: Resolve = resolve_host
                   ) -> NetworkLimits:
    """The network limits from parsed values (`get`) and the raw keys (`originals`)."""
    per_ip = int(get(PER_IP_KEY))  # type: ignore[call-overload]
    overrides = parse_ip_overrides(str(get(OVERRIDES_KEY) or ""))
    if per_ip == 0 and not overrides:
        raise ConfigError(PER_IP_KEY, f"can be 0 only when {OVERRIDES_KEY} is set")
    queued_bytes = int(get("queued.max.request.bytes"))  # type: ignore[call-overload]
    max_frame = int(get("socket.request.max.bytes"))  # type: ignore[call-overload]
    if 0 < queued_bytes < max_frame:
        raise ConfigError("queued.max.request.bytes",
                          f"{queued_bytes} is below socket.request.max.bytes ({max_frame}); "
                          f"it must be at least that, or -1 for no bound")
    idle_ms = int(get("connections.max.idle.ms"))  # type: ignore[call-overload]
    delay_ms = int(get("connection.failed.authentication.delay.ms"))  # type: ignore[call-overload]
    if idle_ms >= 0 and delay_ms >= idle_ms:
        raise ConfigError("connection.failed.authentication.delay.ms",
                          f"{delay_ms} must be less than connections.max.idle.ms ({idle_ms})")
    return NetworkLimits(
        max_connections_per_ip=per_ip,
        per_ip_overrides=resolve_overrides(overrides, resolve=resolve),
        per_listener=listener_max_connections(originals, listener_names),
        request_read_timeout_ms=int(get("raftka.socket.request.read.timeout.ms")),  # type: ignore[call-overload]
        request_max_elements=int(get("raftka.socket.request.max.elements")),  # type: ignore[call-overload]
        queued_max_requests=int(get("queued.max.requests")),  # type: ignore[call-overload]
        queued_max_request_bytes=queued_bytes,
        shutdown_timeout_ms=int(get("raftka.shutdown.timeout.ms")),  # type: ignore[call-overload]
    )
