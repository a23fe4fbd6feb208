"""The trio network server: one TCP listener per configured listener, shared limits."""

from __future__ import annotations

import errno
import itertools
import logging
import math
import ssl
from typing import Mapping, Sequence

import trio

from clients.net.socket_buffers import apply_buffer_sizes
from broker.config.endpoints import TLS_SECURITY_PROTOCOLS, Listener
from broker.config.network_limits import normalise_address
from broker.network.backlog import MemoryPool, RequestBacklog
from broker.network.codec import WireCodec, default_codec
from broker.network.connection import Connection
from broker.network.large_requests import LargeRequests
from broker.network.connection_quotas import ConnectionQuotas
from broker.apis.request import ConnectionContext, RequestRouter
from broker.sasl.sessions import SaslSessions
from broker.network.settings import ServerSettings
from broker.network.tls import HandshakeFailed, accept_tls, peer_principal

logger = logging.getLogger(__name__)

INT_MAX = 2**31 - 1
# Connections held back at a limit (per listener), or refused by the per-address limit, are
# logged at most this often.
HELD_BACK_LOG_INTERVAL_S = 10.0
# accept() failing for want of descriptors or memory: the listener waits this long and
# tries again (as trio's serve_listeners does), logging at most once an interval.
_ACCEPT_CAPACITY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
_ACCEPT_RETRY_S = 0.1


class NetworkServer:
    """Serves Kafka-protocol connections on `listeners` through `router`.

    Run `serve` under `nursery.start` (it reports the bound addresses), call `stop()` for a
    graceful stop: accepting ends, in-flight requests get `shutdown_grace_s` to finish.
    `bind()` first binds the sockets without accepting; then `serve` uses them, else
    `aclose()` releases them. Listeners whose protocol is SSL or SASL_SSL take their TLS
    context from `ssl_contexts` (by listener name) and never serve plaintext.

    Limits shared by every connection: the connection quotas (`ConnectionQuotas`), and the
    backlog of requests read and not yet handled, in number and in bytes (`backlog`)."""

    def __init__(self, listeners: Sequence[Listener], router: RequestRouter,
                 settings: ServerSettings = ServerSettings(),
                 codec: WireCodec | None = None,
                 ssl_contexts: Mapping[str, ssl.SSLContext] | None = None, *,
                 sasl: "SaslSessions | None" = None) -> None:
        self.listeners = list(listeners)
        self.sasl = sasl
        self.ssl_contexts = dict(ssl_contexts or {})
        for listener in self.listeners:
            if (listener.security_protocol in TLS_SECURITY_PROTOCOLS
                    and listener.name not in self.ssl_contexts):
                raise ValueError(f"listener {listener.name} uses "
                                 f"{listener.security_protocol} but has no TLS context")
        self.router = router
        self.settings = settings
        self.codec: WireCodec = codec if codec is not None else default_codec()
        self.supported_versions: dict[int, tuple[int, int]] = {
            int(k): (int(v[0]), int(v[1])) for k, v in self.codec.SUPPORTED_VERSIONS.items()
        }
        self._addresses: dict[str, tuple[str, int]] = {}
        # Sockets bound by `bind` ahead of `serve`; None until then.
        self._bound: list[tuple[Listener, list[trio.SocketListener]]] | None = None
        self._connections: set[Connection] = set()
        self.quotas = ConnectionQuotas(
            [listener.name for listener in self.listeners],
            max_connections=settings.max_connections,
            per_listener=settings.max_connections_per_listener,
            max_per_ip=settings.max_connections_per_ip,
            per_ip_overrides=settings.max_connections_per_ip_overrides,
            inter_broker_listener=settings.inter_broker_listener)
        self.backlog = RequestBacklog(settings.queued_max_requests)
        self.pool = MemoryPool(settings.queued_max_request_bytes)
        self.large_requests = LargeRequests()
        self._held_back_logged: dict[str, float] = {}
        self._refusal_logged = -math.inf
        self._accept_failure_logged = -math.inf
        self._refused = 0
        self._ids = itertools.count(1)
        self._stop_requested = trio.Event()

    @property
    def addresses(self) -> Mapping[str, tuple[str, int]]:
        """Listener name -> bound (host, port); real ports when the config said 0."""
        return dict(self._addresses)

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    def connections_by_listener(self) -> dict[str, int]:
        """Open connections per listener name (every listener listed, 0 when idle)."""
        counts = {listener.name: 0 for listener in self.listeners}
        for connection in self._connections:
            name = connection.ctx.listener_name
            counts[name] = counts.get(name, 0) + 1
        return counts

    def stop(self) -> None:
        """Begin a graceful stop (safe to call more than once, from the trio thread)."""
        self._stop_requested.set()

    async def bind(self) -> Mapping[str, tuple[str, int]]:
        """Bind every listener now, without accepting yet (`serve` accepts), as Kafka's
        socket server binds before the broker registers: a taken port fails start-up before
        the cluster sees the node. Raises OSError naming the listener; binds nothing then."""
        if self._bound is None:
            bound: list[tuple[Listener, list[trio.SocketListener]]] = []
            try:
                for listener in self.listeners:
                    bound.append((listener, await self._bind(listener)))
            except BaseException:
                with trio.CancelScope(shield=True):
                    await self._close_sockets(bound)
                raise
            self._bound = bound
        return self.addresses

    async def aclose(self) -> None:
        """Release sockets bound by `bind` when `serve` never ran (safe to call again)."""
        if self._bound is not None:
            with trio.CancelScope(shield=True):
                await self._close_sockets(self._bound)

    async def serve(self, *, task_status: trio.TaskStatus[Mapping[str, tuple[str, int]]]
                    = trio.TASK_STATUS_IGNORED) -> None:
        bound: list[tuple[Listener, list[trio.SocketListener]]] = []
        try:
            await self.bind()
            assert self._bound is not None
            bound = self._bound
            async with trio.open_nursery() as connections:
                async with trio.open_nursery() as acceptors:
                    for listener, sockets in bound:
                        for sock in sockets:
                            acceptors.start_soon(self._accept_loop, listener, sock, connections)
                    task_status.started(self.addresses)
                    await self._stop_requested.wait()
                    acceptors.cancel_scope.cancel()
                await self._close_sockets(bound)
                logger.info("stopping: %d connection(s) to drain", len(self._connections))
                for connection in list(self._connections):
                    connection.stop_reading()
                connections.cancel_scope.deadline = (trio.current_time()
                                                     + self.settings.shutdown_grace_s)
        finally:
            with trio.CancelScope(shield=True):
                await self._close_sockets(bound)

    @staticmethod
    async def _close_sockets(bound: list[tuple[Listener, list[trio.SocketListener]]]) -> None:
        for _, sockets in bound:
            for sock in sockets:
                await sock.aclose()

    async def _bind(self, listener: Listener) -> list[trio.SocketListener]:
        try:
            sockets = await trio.open_tcp_listeners(listener.port, host=listener.host or None)
        except OSError as exc:
            raise OSError(exc.errno, f"cannot listen on {listener.uri()} "
                          f"({exc.strerror or exc})") from exc
        for sock in sockets:
            # Accepted connections inherit the listener's receive buffer (and the window
            # scale it implies); the send buffer is set on each (Kafka's Acceptor).
            apply_buffer_sizes(sock.socket, receive_bytes=self.settings.receive_buffer_bytes)
        sockname = sockets[0].socket.getsockname()
        self._addresses[listener.name] = (sockname[0], sockname[1])
        logger.info("listening on %s (%s:%d)", listener.name, sockname[0], sockname[1])
        return sockets

    async def _accept_loop(self, listener: Listener, sock: trio.SocketListener,
                           connections: trio.Nursery) -> None:
        name = listener.name
        while True:
            await self._wait_for_slot(name)
            try:
                stream = await sock.accept()
            except OSError as exc:
                if exc.errno not in _ACCEPT_CAPACITY_ERRNOS:
                    raise
                # Out of descriptors or memory for now: the listener stays, and accepts
                # again once some are given back (new connections wait in the backlog).
                self._log_accept_failure(name, exc)
                await trio.sleep(_ACCEPT_RETRY_S)
                continue
            try:
                peer = stream.socket.getpeername()
                apply_buffer_sizes(stream.socket, send_bytes=self.settings.send_buffer_bytes)
            except OSError:
                await trio.aclose_forcefully(stream)
                continue
            # Another acceptor of this listener may have taken the slot meanwhile.
            await self._wait_for_slot(name)
            address = normalise_address(peer[0])
            if not self.quotas.add(name, address):
                self._log_refusal(peer, name, address)
                await trio.aclose_forcefully(stream)
                continue
            if self.quotas.over_limit:
                self._close_least_recently_active()
            ctx = ConnectionContext(next(self._ids), name, listener.security_protocol,
                                    (peer[0], peer[1]))
            context = self.ssl_contexts.get(name)
            if context is None:
                self._start_connection(stream, ctx, connections, address)
            else:
                connections.start_soon(self._serve_tls_connection, context, stream, ctx,
                                       connections, address)

    async def _wait_for_slot(self, listener: str) -> None:
        """Hold accepting back while `listener` or the server is at its connection limit."""
        quotas = self.quotas
        if quotas.slot_available(listener):
            return
        limit = quotas.listener_limit(listener)
        now = trio.current_time()
        if now - self._held_back_logged.get(listener, -math.inf) >= HELD_BACK_LOG_INTERVAL_S:
            self._held_back_logged[listener] = now
            logger.warning("%s has its maximum of connections (max.connections %d%s); new "
                           "connections wait until one closes", listener,
                           quotas.max_connections,
                           "" if limit == INT_MAX else f", listener limit {limit}")
        await quotas.wait_for_slot(listener)

    def _log_refusal(self, peer: tuple[str, int], listener: str, address: str) -> None:
        """Log a connection refused by max.connections.per.ip; a flood of them is logged at
        most once per HELD_BACK_LOG_INTERVAL_S, with the count refused meanwhile."""
        self._refused += 1
        now = trio.current_time()
        if now - self._refusal_logged < HELD_BACK_LOG_INTERVAL_S:
            return
        logger.info("refusing connection from %s:%d on %s: the address already has its "
                    "maximum of %d connections (max.connections.per.ip)%s", peer[0], peer[1],
                    listener, self.quotas.address_limit(address),
                    "" if self._refused == 1 else
                    f"; {self._refused} connections refused since the last such line")
        self._refusal_logged, self._refused = now, 0

    def _log_accept_failure(self, listener: str, exc: OSError) -> None:
        now = trio.current_time()
        if now - self._accept_failure_logged >= HELD_BACK_LOG_INTERVAL_S:
            logger.error("cannot accept connections on %s for now: %s; retrying every "
                         "%g s", listener, exc.strerror or exc, _ACCEPT_RETRY_S)
            self._accept_failure_logged = now

    def _close_least_recently_active(self) -> None:
        """The protected listener went past max.connections: make room elsewhere (Kafka
        closes the least recently used connection of another listener)."""
        candidates = [c for c in self._connections
                      if c.ctx.listener_name != self.quotas.protected]
        if candidates:
            victim = min(candidates, key=lambda c: c.last_activity)
            victim.close("max.connections reached and an inter-broker connection arrived; "
                         "closing the least recently active connection")

    def _start_connection(self, stream: trio.abc.Stream, ctx: ConnectionContext,
                          connections: trio.Nursery, address: str) -> None:
        connection = Connection(stream, ctx, router=self.router, codec=self.codec,
                                settings=self.settings,
                                supported_versions=self.supported_versions,
                                sasl=(None if self.sasl is None
                                      else self.sasl.new_session(ctx.listener_name)),
                                backlog=self.backlog, pool=self.pool,
                                large=self.large_requests)
        self._connections.add(connection)
        connections.start_soon(self._run_connection, connection, address)

    async def _serve_tls_connection(self, context: ssl.SSLContext, stream: trio.SocketStream,
                                    ctx: ConnectionContext, connections: trio.Nursery,
                                    address: str) -> None:
        """The TLS handshake, in the connection's own task so a slow or hostile peer holds
        up nobody else; then the connection runs over the TLS stream."""
        listener_name = ctx.listener_name
        started = False
        try:
            tls = await accept_tls(stream, context)
            principal = peer_principal(tls)
            if principal is not None:
                ctx.principal = principal
            self._start_connection(tls, ctx, connections, address)
            started = True
        except HandshakeFailed as exc:
            logger.info("closing connection %d from %s:%d on %s: %s", ctx.connection_id,
                        ctx.peer[0], ctx.peer[1], listener_name, exc)
            await trio.aclose_forcefully(stream)
        except Exception:
            # Whatever a peer's handshake or certificate provokes ends that connection
            # only, as a failure inside a running connection does.
            logger.exception("TLS set-up of connection %d from %s:%d on %s failed; "
                             "closing it", ctx.connection_id, ctx.peer[0], ctx.peer[1],
                             listener_name)
            await trio.aclose_forcefully(stream)
        except BaseException:
            await trio.aclose_forcefully(stream)
            raise
        finally:
            if not started:
                self.quotas.remove(listener_name, address)

    async def _run_connection(self, connection: Connection, address: str) -> None:
        try:
            await connection.run()
        except Exception:
            # Whatever goes wrong inside one connection ends that connection only; the
            # listener and every other client keep going.
            peer = connection.ctx.peer
            logger.exception("connection from %s:%s on %s failed; closing it", peer[0], peer[1],
                             connection.ctx.listener_name)
        finally:
            self._connections.discard(connection)
            self.quotas.remove(connection.ctx.listener_name, address)
