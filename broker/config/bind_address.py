"""The local address a node's outgoing connections bind to (`raftka.client.bind.address`).

Binding every connection a node opens to the node's own address makes its traffic tell
apart from other nodes' on one host (each node on its own loopback address): without it
the kernel picks 127.0.0.1 as the source of every connection.
"""

from __future__ import annotations

import ipaddress
from typing import Sequence

from broker.config.endpoints import Listener
from broker.config.errors import ConfigError

BIND_ADDRESS_KEY = "raftka.client.bind.address"
_WILDCARDS = {"", "0.0.0.0", "::"}


def client_bind_address(configured: str | None, listeners: Sequence[Listener]) -> str | None:
    """The configured address (an IP literal), else the first listener's host when that is
    an IP literal and not a wildcard, else None (the kernel chooses)."""
    if configured is not None:
        value = configured.strip()
        if not value:
            return None
        try:
            address = ipaddress.ip_address(value.strip("[]"))
        except ValueError:
            raise ConfigError(BIND_ADDRESS_KEY, f"{configured!r} is not an IP address") from None
        if address.is_unspecified:
            raise ConfigError(BIND_ADDRESS_KEY, f"{configured!r} is a wildcard address; "
                                                f"leave the key empty to let the system choose")
        return str(address)
    if not listeners or listeners[0].host in _WILDCARDS:
        return None
    try:
        return str(ipaddress.ip_address(listeners[0].host))
    except ValueError:
        return None  # a host name: the kernel picks the source, as before


def source_address_for(bind_address: str | None, destination_host: str) -> str | None:
    """`bind_address` when it can be the source of a connection to `destination_host`:
    not when the destination is an IP literal of the other family (an IPv6 listener's
    node reaching an IPv4 peer), where binding would make every attempt fail."""
    if bind_address is None:
        return None
    try:
        destination = ipaddress.ip_address(destination_host.strip("[]"))
    except ValueError:
        return bind_address  # a name: resolved at connect time
    return bind_address if ipaddress.ip_address(bind_address).version == \
        destination.version else None
