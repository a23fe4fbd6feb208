"""Connection counts and limits of one network server (Kafka's ConnectionQuotas).

`max.connections` and `listener.name.<name>.max.connections` hold new connections back: the
acceptor waits for a free slot and unaccepted connections queue in the kernel. The
inter-broker listener, while the server has another listener, is exempt from
`max.connections` (its own listener limit still applies); a connection it accepts beyond it
makes the server close the least recently active connection of another listener, so that
replication is never locked out by clients. `max.connections.per.ip` (and its overrides)
closes a connection from an address that already has its maximum, once accepted.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import trio

INT_MAX = 2**31 - 1


class ConnectionQuotas:
    """Open connections by listener and by peer address, against their limits."""

    def __init__(self, listener_names: Sequence[str], *, max_connections: int = INT_MAX,
                 per_listener: Mapping[str, int] | None = None,
                 max_per_ip: int = INT_MAX, per_ip_overrides: Mapping[str, int] | None = None,
                 inter_broker_listener: str | None = None) -> None:
        self.max_connections = max_connections
        self._per_listener = dict(per_listener or {})
        self._max_per_ip = max_per_ip
        self._per_ip_overrides = dict(per_ip_overrides or {})
        names = list(dict.fromkeys(listener_names))
        # Kafka protects the inter-broker listener only when another listener exists.
        self.protected = (inter_broker_listener
                          if inter_broker_listener in names and len(names) > 1 else None)
        self.total = 0
        self._by_listener: dict[str, int] = {name: 0 for name in names}
        self._by_address: dict[str, int] = {}
        self._freed = trio.Event()
        self._waiting = 0

    def count(self, address: str) -> int:
        """Open connections from `address`."""
        return self._by_address.get(address, 0)

    def listener_limit(self, listener: str) -> int:
        return self._per_listener.get(listener, INT_MAX)

    def address_limit(self, address: str) -> int:
        return self._per_ip_overrides.get(address, self._max_per_ip)

    def slot_available(self, listener: str) -> bool:
        """Whether `listener` may accept one more connection now."""
        if self._by_listener.get(listener, 0) >= self.listener_limit(listener):
            return False
        return listener == self.protected or self.total < self.max_connections

    async def wait_for_slot(self, listener: str) -> None:
        """Return once `listener` may accept one more connection."""
        while not self.slot_available(listener):
            self._waiting += 1
            try:
                await self._freed.wait()
            finally:
                self._waiting -= 1

    def add(self, listener: str, address: str) -> bool:
        """Count a connection just accepted; False (and nothing counted) when its address
        already has its maximum."""
        count = self._by_address.get(address, 0)
        if count >= self.address_limit(address):
            return False
        self._by_address[address] = count + 1
        self._by_listener[listener] = self._by_listener.get(listener, 0) + 1
        self.total += 1
        return True

    def remove(self, listener: str, address: str) -> None:
        """A counted connection closed."""
        count = self._by_address.get(address, 0) - 1
        if count > 0:
            self._by_address[address] = count
        else:
            self._by_address.pop(address, None)
        self._by_listener[listener] = self._by_listener.get(listener, 0) - 1
        self.total -= 1
        if self._waiting:
            freed, self._freed = self._freed, trio.Event()
            freed.set()

    @property
    def over_limit(self) -> bool:
        """More connections than max.connections (the protected listener went beyond it)."""
        return self.total > self.max_connections
