"""Connections to a cluster's brokers, one per broker, for the trio and blocking clients.

A pool opens connections on demand, keyed by broker id, and forgets one that fails so the
next request reconnects. ``request_any`` goes to any reachable broker: an open connection
first, then the known brokers, then the bootstrap addresses. A FatalConnectionError (a
refused authentication or TLS handshake, a security protocol mismatch), from the broker a
request is addressed to or from every broker ``request_any`` tried, is the pool's for good:
every later request raises it at once, as Kafka's clients stop at an
AuthenticationException instead of retrying it.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable

import trio

from clients.common.cluster import BrokerNode
from clients.net import (
    PLAINTEXT,
    BlockingKafkaConnection,
    ClientSecurity,
    FatalConnectionError,
    KafkaConnection,
    KafkaConnectionError,
)
from clients.net.sasl import SaslCredentials

logger = logging.getLogger(__name__)


def _candidates(bootstrap: list[tuple[str, int]], brokers: Iterable[BrokerNode]
                ) -> list[tuple[int | None, str, int]]:
    seen: set[tuple[str, int]] = set()
    out: list[tuple[int | None, str, int]] = []
    for node in brokers:
        if (node.host, node.port) not in seen:
            seen.add((node.host, node.port))
            out.append((node.node_id, node.host, node.port))
    for host, port in bootstrap:
        if (host, port) not in seen:
            seen.add((host, port))
            out.append((None, host, port))
    return out


def _unreachable(failures: list[KafkaConnectionError],
                 servers: list[tuple[str, int]] | None = None) -> KafkaConnectionError:
    """The error of a request no broker answered: the first FatalConnectionError when
    every broker failed fatally (retrying cannot help), else a KafkaConnectionError naming
    the bootstrap ``servers`` and each failure."""
    fatal = [f for f in failures if isinstance(f, FatalConnectionError)]
    if failures and len(fatal) == len(failures):
        return fatal[0]
    where = f" at {','.join(f'{h}:{p}' for h, p in servers)}" if servers else ""
    return KafkaConnectionError(f"no broker reachable{where}: "
                                + "; ".join(str(f) for f in failures))


class _FatalRecord:
    """The FatalConnectionError that ended a pool, if any (see the module docstring)."""

    fatal_error: FatalConnectionError | None = None

    def check_fatal(self) -> None:
        """Raise the FatalConnectionError that ended the pool, if one did."""
        if self.fatal_error is not None:
            raise self.fatal_error

    def _note(self, error: KafkaConnectionError) -> KafkaConnectionError:
        if isinstance(error, FatalConnectionError) and self.fatal_error is None:
            self.fatal_error = error
        return error


class TrioConnectionPool(_FatalRecord):
    """Trio connections by broker id; bootstrap-only connections have negative keys."""

    def __init__(self, bootstrap: list[tuple[str, int]], client_id: str,
                 connect_timeout_s: float, request_timeout_s: float,
                 security: ClientSecurity = PLAINTEXT,
                 sasl: SaslCredentials | None = None) -> None:
        self.bootstrap = bootstrap
        self.sasl = sasl
        self.client_id = client_id
        self.security = security
        self.connect_timeout_s = connect_timeout_s
        self.request_timeout_s = request_timeout_s
        self._connections: dict[int, KafkaConnection] = {}
        self._locks: dict[int, trio.Lock] = {}
        self._bootstrap_keys = {address: -(i + 1) for i, address in enumerate(bootstrap)}
        self._any_calls = 0

    async def _connect(self, key: int, host: str, port: int) -> KafkaConnection:
        lock = self._locks.setdefault(key, trio.Lock())
        async with lock:
            conn = self._connections.get(key)
            if conn is not None and not conn.closed:
                return conn
            conn = await self._new(host, port)
            self._connections[key] = conn
            return conn

    async def _new(self, host: str, port: int) -> KafkaConnection:
        return await KafkaConnection.connect(host, port, client_id=self.client_id,
                                             timeout=self.connect_timeout_s,
                                             security=self.security, sasl=self.sasl,
                                             diagnose=True)

    async def open(self, host: str, port: int) -> KafkaConnection:
        """A new connection with the pool's settings, outside the pool (a group's
        coordinator connection); a FatalConnectionError ends the pool too."""
        self.check_fatal()
        try:
            return await self._new(host, port)
        except FatalConnectionError as exc:
            self._note(exc)
            raise

    def connected_addresses(self) -> set[tuple[str, int]]:
        """(host, port) of every open connection, bootstrap ones included."""
        return {(c.host, c.port) for c in self._connections.values() if not c.closed}

    async def connection(self, node: BrokerNode) -> KafkaConnection:
        self.check_fatal()
        try:
            return await self._connect(node.node_id, node.host, node.port)
        except FatalConnectionError as exc:
            self._note(exc)
            raise

    async def request(self, node: BrokerNode, api_key: int, body: dict[str, Any],
                      version: int | None = None) -> dict[str, Any]:
        """One request to ``node``; KafkaConnectionError drops the connection and re-raises."""
        self.check_fatal()
        # An open connection is used without the connect lock's scheduler round (the
        # request is a checkpoint of its own).
        conn = self._connections.get(node.node_id)
        if conn is None or conn.closed:
            conn = await self.connection(node)
        try:
            return await conn.request(api_key, body, version, timeout=self.request_timeout_s)
        except KafkaConnectionError as exc:
            self._forget(node.node_id, conn)
            self._note(exc)
            raise

    def _forget(self, key: int, conn: KafkaConnection) -> None:
        # Another task may already have replaced the broken connection: keep that one.
        if self._connections.get(key) is conn:
            del self._connections[key]

    async def request_any(self, api_key: int, body: dict[str, Any],
                          brokers: Iterable[BrokerNode] = (),
                          version: int | None = None) -> dict[str, Any]:
        """Send to a reachable broker; KafkaConnectionError if none answers.

        Open connections come first, each call starting at the next one (as Kafka's
        least-loaded-node choice moves on), so repeated calls, a metadata refresh retried
        because an answer named no leader, do not keep asking the same broker: it may be
        one cut off from the cluster, whose metadata never changes."""
        self.check_fatal()
        failures: list[KafkaConnectionError] = []
        # A snapshot: other tasks may drop or replace connections while this one waits.
        open_first = [(k, c) for k, c in self._connections.items() if not c.closed]
        if open_first:
            start = self._any_calls % len(open_first)
            open_first = open_first[start:] + open_first[:start]
        self._any_calls += 1
        for key, open_conn in open_first:
            try:
                return await open_conn.request(
                    api_key, body, version, timeout=self.request_timeout_s)
            except KafkaConnectionError as exc:
                self._forget(key, open_conn)
                failures.append(exc)
        for node_id, host, port in _candidates(self.bootstrap, brokers):
            key = node_id if node_id is not None else self._bootstrap_keys[(host, port)]
            conn = None
            try:
                conn = await self._connect(key, host, port)
                return await conn.request(api_key, body, version,
                                          timeout=self.request_timeout_s)
            except KafkaConnectionError as exc:
                if conn is not None:
                    self._forget(key, conn)
                failures.append(exc)
        raise self._note(_unreachable(failures, self.bootstrap))

    async def aclose(self) -> None:
        connections, self._connections = list(self._connections.values()), {}
        for conn in connections:
            await conn.aclose()


class BlockingConnectionPool(_FatalRecord):
    """The blocking counterpart of TrioConnectionPool, one request at a time."""

    def __init__(self, bootstrap: list[tuple[str, int]], client_id: str,
                 request_timeout_s: float, security: ClientSecurity = PLAINTEXT,
                 sasl: SaslCredentials | None = None) -> None:
        self.bootstrap = bootstrap
        self.sasl = sasl
        self.client_id = client_id
        self.security = security
        self.request_timeout_s = request_timeout_s
        self._connections: dict[int, BlockingKafkaConnection] = {}
        self._bootstrap_keys = {address: -(i + 1) for i, address in enumerate(bootstrap)}
        self._any_calls = 0

    def _connect(self, key: int, host: str, port: int) -> BlockingKafkaConnection:
        conn = self._connections.get(key)
        if conn is None or conn.closed:
            conn = BlockingKafkaConnection(host, port, client_id=self.client_id,
                                           timeout=self.request_timeout_s,
                                           security=self.security, sasl=self.sasl,
                                           diagnose=True)
            self._connections[key] = conn
        return conn

    def connected_addresses(self) -> set[tuple[str, int]]:
        """(host, port) of every open connection, bootstrap ones included."""
        return {(c.host, c.port) for c in self._connections.values() if not c.closed}

    def connection(self, node: BrokerNode) -> BlockingKafkaConnection:
        self.check_fatal()
        try:
            return self._connect(node.node_id, node.host, node.port)
        except FatalConnectionError as exc:
            self._note(exc)
            raise

    def request(self, node: BrokerNode, api_key: int, body: dict[str, Any],
                version: int | None = None) -> dict[str, Any]:
        conn = self.connection(node)
        try:
            return conn.request(api_key, body, version)
        except KafkaConnectionError as exc:
            self._connections.pop(node.node_id, None)
            self._note(exc)
            raise

    def request_any(self, api_key: int, body: dict[str, Any],
                    brokers: Iterable[BrokerNode] = (),
                    version: int | None = None) -> dict[str, Any]:
        """Send to a reachable broker, open connections first, each call starting at the
        next one (see TrioConnectionPool.request_any)."""
        self.check_fatal()
        failures: list[KafkaConnectionError] = []
        open_keys = [k for k, c in self._connections.items() if not c.closed]
        if open_keys:
            start = self._any_calls % len(open_keys)
            open_keys = open_keys[start:] + open_keys[:start]
        self._any_calls += 1
        for key in open_keys:
            try:
                return self._connections[key].request(api_key, body, version)
            except KafkaConnectionError as exc:
                self._connections.pop(key, None)
                failures.append(exc)
        for node_id, host, port in _candidates(self.bootstrap, brokers):
            key = node_id if node_id is not None else self._bootstrap_keys[(host, port)]
            try:
                return self._connect(key, host, port).request(api_key, body, version)
            except KafkaConnectionError as exc:
                self._connections.pop(key, None)
                failures.append(exc)
        raise self._note(_unreachable(failures, self.bootstrap))

    def close(self) -> None:
        connections, self._connections = list(self._connections.values()), {}
        for conn in connections:
            conn.close()
