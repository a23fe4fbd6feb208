"""Listener and voter address lists: `NAME://host:port,...` and `id@host:port,...`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from broker.config.errors import ConfigError
from metadata import addresses

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# What the broker serves today; a listener of any other protocol stops start-up.
SUPPORTED_SECURITY_PROTOCOLS = ("PLAINTEXT", "SASL_PLAINTEXT")

_LISTENER_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class Listener:
    """One listener: a name (upper-cased, as Kafka normalises it), bind host, port, protocol."""

    name: str
    host: str
    port: int
    security_protocol: str

    def uri(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


def split_list(value: str) -> list[str]:
    """Kafka's list type: comma separated, blanks trimmed, empty items dropped."""
    return [item.strip() for item in value.split(",") if item.strip()]


def parse_host_port(text: str, key: str, *, allow_empty_host: bool) -> tuple[str, int]:
    """`host:port` or `[v6]:port`; the port must be 0..65535."""
    try:
        return addresses.parse_host_port(text, allow_empty_host=allow_empty_host)
    except ValueError as exc:
        raise ConfigError(key, str(exc)) from None


def parse_security_protocol_map(value: str, key: str) -> dict[str, str]:
    """`NAME:PROTOCOL,...` with names upper-cased."""
    result: dict[str, str] = {}
    for item in split_list(value):
        name, sep, protocol = item.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not name or protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(key, f"bad entry {item!r}: expected NAME:PROTOCOL with PROTOCOL "
                              f"one of {', '.join(SECURITY_PROTOCOLS)}")
        if name in result:
            raise ConfigError(key, f"listener name {name} appears twice")
        result[name] = protocol
    return result


def parse_listeners(value: str, key: str, protocol_map: dict[str, str],
                    protocol_map_key: str) -> list[Listener]:
    """Parse a listener list, resolving each name's security protocol through the map."""
    listeners: list[Listener] = []
    seen_names: set[str] = set()
    seen_ports: set[int] = set()
    for item in split_list(value):
        name, sep, address = item.partition("://")
        name = name.upper()
        if not sep or not _LISTENER_NAME.match(name):
            raise ConfigError(key, f"malformed listener {item!r}: expected NAME://host:port")
        host, port = parse_host_port(address, key, allow_empty_host=True)
        if name in seen_names:
            raise ConfigError(key, f"duplicate listener name {name}")
        if port != 0 and port in seen_ports:
            raise ConfigError(key, f"two listeners use port {port}")
        if name not in protocol_map:
            raise ConfigError(protocol_map_key, f"no security protocol for listener {name} "
                              f"(listed in {key})")
        seen_names.add(name)
        seen_ports.add(port)
        listeners.append(Listener(name, host, port, protocol_map[name]))
    return listeners


def parse_voters(value: str, key: str) -> dict[int, tuple[str, int]]:
    """`id@host:port,...` -> {id: (host, port)}; ids non-negative and unique, ports > 0."""
    try:
        return addresses.parse_voter_list(value)
    except ValueError as exc:
        raise ConfigError(key, str(exc)) from None
