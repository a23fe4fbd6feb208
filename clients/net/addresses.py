"""Parsing `bootstrap.servers`-style address lists."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1); other names and
    wildcard addresses count as reachable from outside."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_host_port(entry: str) -> tuple[str, int]:
    """Parse ``host:port``, ``[ipv6]:port`` or (as Kafka allows) ``ipv6:port``.

    A ``SCHEME://`` prefix such as ``PLAINTEXT://`` is ignored, as Kafka's clients do.
    Raises ValueError naming the entry.
    """
    text = entry.strip()
    if "://" in text:
        text = text.split("://", 1)[1]
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise ValueError(f"invalid address {entry!r}: expected [IPV6]:PORT")
        port_text = rest[1:]
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            raise ValueError(f"invalid address {entry!r}: expected HOST:PORT")
    if not host:
        raise ValueError(f"invalid address {entry!r}: the host is empty")
    if not port_text.isdigit():
        raise ValueError(f"invalid address {entry!r}: the port must be a number")
    port = int(port_text)
    if not 0 < port <= 65535:
        raise ValueError(f"invalid address {entry!r}: port {port} is outside 1-65535")
    return host, port


def parse_bootstrap_servers(spec: str) -> list[tuple[str, int]]:
    """Parse a comma-separated ``h1:p1,h2:p2`` list into (host, port) pairs, in order.

    Blank entries are skipped; an empty list or any malformed entry raises ValueError.
    """
    entries = [e for e in spec.split(",") if e.strip()]
    if not entries:
        raise ValueError(f"no server addresses given in {spec!r}: expected HOST:PORT[,HOST:PORT]")
    return [parse_host_port(entry) for entry in entries]
