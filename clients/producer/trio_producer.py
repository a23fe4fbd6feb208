"""The trio producer: ``async with open_producer(config) as producer: ...``.

Ready batches go to their partition leaders, at most
``max.in.flight.requests.per.connection`` requests per broker: drained by the send that starts
a batch, by the answer that frees an in-flight slot, and by a background sender task that
also keeps linger.ms, refreshes metadata when a leader is unknown or has moved, and gets the
producer id. ``send`` waits only for the topic's metadata; the returned
future completes when the broker acknowledges (or the record fails for good).
"""

from __future__ import annotations

import logging
import math
from collections import deque
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Generator, Iterable, Mapping

import trio

from clients.common.cluster import metadata_request
from clients.common.connections import TrioConnectionPool
from clients.clock import monotonic_ms
from clients.net import KafkaConnectionError
from clients.producer.accumulator import ProducerBatch
from clients.producer.config import ProducerConfig
from clients.producer.core import DeliveryCallback, ProducerCore
from clients.producer.future import DeliveryFuture, RecordMetadata
from clients.producer.transactions import ConsumerGroupMetadata
from clients.producer.trio_transactions import TrioTransactions
from clients.protocol import ApiKey, ErrorCode, KafkaError, ProtocolError

logger = logging.getLogger(__name__)

# The longest a send that starts a batch waits for a backlogged partition's queue to drain
# (never longer than linger.ms): bounded, so a slow or unreachable broker only slows sends
# down until buffer.memory takes over.
_MAX_CATCH_UP_MS = 5


class ProducerClosedError(RuntimeError):
    """``send`` was called on a closed producer."""


class TrioDeliveryFuture(DeliveryFuture):
    """A DeliveryFuture that can be awaited: ``metadata = await future``."""

    # Made only when someone waits: most futures of a busy producer are never awaited.
    _event: trio.Event | None = None

    async def wait(self) -> RecordMetadata:
        if not self.done():
            event = self._event
            if event is None:
                event = self._event = trio.Event()
                self.add_callback(lambda _: event.set())
            await event.wait()
        return self.result()

    def __await__(self) -> Generator[Any, None, RecordMetadata]:
        return self.wait().__await__()


class Producer:
    """A trio producer; obtain one from ``open_producer``, which runs its sender task."""

    def __init__(self, config: ProducerConfig) -> None:
        self.config = config
        self._core = ProducerCore(config)
        self._pool = TrioConnectionPool(config.bootstrap_servers, config.client_id,
                                        config.connect_timeout_ms / 1000,
                                        config.request_timeout_ms / 1000,
                                        security=config.security, sasl=config.sasl)
        self._wakeup = trio.Event()
        self._changed = trio.Event()
        self._flushing = 0
        self._closed = False
        self._metadata_lock = trio.Lock()
        self._catch_up_s = min(max(config.linger_ms, 1), _MAX_CATCH_UP_MS) / 1000
        # The sender's nursery of requests, while it runs.
        self._requests: trio.Nursery | None = None
        # When the sleeping sender wakes by itself (trio clock); -inf while it is awake and
        # will look at the batches again anyway.
        self._sender_wakes_at = -math.inf
        # Drained requests per broker, oldest first, each taken by the next request task
        # to run (see _start_requests).
        self._outbox: dict[int, deque[list[ProducerBatch]]] = {}
        self._transactions = TrioTransactions(self._core, self._pool, self.flush, self._wake)

    # ---- transactions (with transactional.id) ----

    async def init_transactions(self) -> None:
        """Register ``transactional.id`` with its coordinator: fences older producers of
        the id and completes (aborts) their open transaction. Call once, first."""
        await self._transactions.init()

    async def begin_transaction(self) -> None:
        self._transactions.manager.begin()

    async def send_offsets_to_transaction(
            self, offsets: Mapping[tuple[str, int], Any],
            group_metadata: ConsumerGroupMetadata | str) -> None:
        """Commit a consumer group's offsets ({(topic, partition): next offset}) as part of
        the transaction (``consumer.group_metadata()`` names the group and generation)."""
        await self._transactions.send_offsets(offsets, group_metadata)

    async def commit_transaction(self) -> None:
        """Flush, then commit; raises the error if any record of the transaction failed
        (then only ``abort_transaction`` may follow)."""
        await self._transactions.end(commit=True)

    async def abort_transaction(self) -> None:
        """Drop unsent records, wait for those in flight, then abort."""
        await self._transactions.end(commit=False)

    # ---- public API ----

    async def send(self, topic: str, value: Any, key: Any = None,
                   headers: Iterable[tuple[str, Any]] | None = None,
                   partition: int | None = None,
                   timestamp: int | None = None,
                   callback: DeliveryCallback | None = None) -> TrioDeliveryFuture:
        """Queue one record; ``await`` the returned future for its RecordMetadata.

        Kafka's order: interceptors' ``on_send``, the metadata wait, room in
        ``buffer.memory``, serializers, the partitioner, the batch. Waits up to
        ``max.block.ms`` in all for the topic's metadata and then for room
        (KafkaError REQUEST_TIMED_OUT / BufferExhaustedError after that); raises KafkaError
        at once for a non-retriable topic error or a bad partition. ``callback(metadata,
        error)`` runs when the record is settled, after interceptors'
        ``on_acknowledgement``.
        """
        if self._closed:
            raise ProducerClosedError("cannot send after the producer is closed")
        core = self._core
        core.check_fatal()
        if core.txn is not None:
            core.check_transaction()
        interceptors = self.config.interceptors
        if interceptors:
            topic, value, key, headers, partition, timestamp = core.intercept(
                topic, value, key, headers, partition, timestamp)
        future = TrioDeliveryFuture()
        blocked_since: float | None = None
        try:
            appended = core.append(topic, value, key, headers, partition, timestamp, future,
                                   monotonic_ms)
            if appended is None:     # waits only here: no coroutine per record
                if not core.topic_ready(topic):
                    blocked_since = trio.current_time()
                    await self._wait_for_topic(topic)
                if not core.has_room():
                    await self._wait_for_room(blocked_since)
                appended = core.append(topic, value, key, headers, partition, timestamp,
                                       future, monotonic_ms)
                assert appended is not None, "ready and with room, with no checkpoint since"
        except Exception as exc:
            core.send_failed(exc)
            raise
        batch, created = appended
        if callback is not None or interceptors:
            core.watch(future, callback)
        # Only a new batch can make one sendable (the one before it may be full); the
        # sender's own timer covers linger.ms. Waking it per record costs a scan each.
        # A caller that never blocks would otherwise buffer everything before the sender
        # ran: yield to it once per batch, so batches go out while records are added, and
        # wait while full batches queue up beyond what may be in flight.
        if created:
            self._dispatch()
            await trio.lowlevel.checkpoint()
            if core.accumulator.backlogged(batch.topic, batch.partition):
                await self._catch_up(batch.topic, batch.partition)
        return future

    async def _catch_up(self, topic: str, partition: int) -> None:
        """Let the sender catch up with a partition whose full batches queue up: parked
        until answers drain the queue (a bounded time), where yielding round after round
        would spend the CPU the sender and the broker need."""
        backlogged = self._core.accumulator.backlogged
        with trio.move_on_after(self._catch_up_s):
            while backlogged(topic, partition):
                changed = self._changed
                await changed.wait()

    async def _wait_for_room(self, blocked_since: float | None = None) -> None:
        # As in Kafka, max.block.ms bounds the metadata wait and this one together.
        budget = self.config.max_block_ms / 1000
        if blocked_since is not None:
            budget -= trio.current_time() - blocked_since
        with trio.move_on_after(max(budget, 0)):
            while not self._core.has_room():
                self._wake()            # the sender sends every batch while it is full
                changed = self._changed
                await changed.wait()
        if not self._core.has_room():
            raise self._core.buffer_exhausted()

    async def send_and_wait(self, topic: str, value: Any, key: Any = None,
                            headers: Iterable[tuple[str, Any]] | None = None,
                            partition: int | None = None,
                            timestamp: int | None = None) -> RecordMetadata:
        """``send`` and wait for the acknowledgement."""
        future = await self.send(topic, value, key, headers, partition, timestamp)
        return await future

    async def flush(self) -> None:
        """Send everything buffered now and wait until every record is settled; raises
        the FatalConnectionError that ended the producer, if one did."""
        await self._settle()
        self._core.check_fatal()

    async def _settle(self) -> None:
        self._flushing += 1
        try:
            self._wake()
            while not self._core.idle():
                changed = self._changed
                await changed.wait()
        finally:
            self._flushing -= 1

    async def partitions_for(self, topic: str) -> list[int]:
        await self._wait_for_topic(topic)
        info = self._core.cluster.topics[topic]
        return sorted(info.partitions)

    async def close(self, timeout: float | None = None) -> None:
        """Send what is buffered, waiting at most ``timeout`` s (None: until settled),
        then fail whatever is left and refuse further sends; ``open_producer``'s exit
        closes the connections."""
        if self._closed:
            return
        with trio.move_on_after(math.inf if timeout is None else max(timeout, 0)):
            await self._settle()
        await self._shutdown(flush=False)

    @property
    def closed(self) -> bool:
        return self._closed

    # ---- internals ----

    def _wake(self) -> None:
        self._wakeup.set()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def _wait_for_topic(self, topic: str) -> None:
        if self._core.topic_ready(topic):
            return
        deadline = trio.current_time() + self.config.max_block_ms / 1000
        while True:
            with trio.move_on_at(deadline):
                await self._refresh_metadata()
            self._core.check_fatal()
            if self._core.topic_ready(topic):
                return
            failure = self._core.topic_failure(topic)
            if failure is not None:
                raise failure
            if trio.current_time() >= deadline:
                raise KafkaError(ErrorCode.REQUEST_TIMED_OUT,
                                 f"topic {topic!r} not present in metadata after "
                                 f"{self.config.max_block_ms} ms")
            await trio.sleep(min(self.config.retry_backoff_ms / 1000,
                                 max(deadline - trio.current_time(), 0)))

    async def _refresh_metadata(self) -> None:
        """Fetch metadata for the producer's topics; failures are logged, not raised."""
        async with self._metadata_lock:
            body = metadata_request(sorted(self._core.topics), allow_auto_topic_creation=True)
            try:
                response = await self._pool.request_any(
                    ApiKey.METADATA, body, self._core.cluster.brokers.values())
            except (KafkaConnectionError, KafkaError, ProtocolError) as exc:
                self._core.metadata_failed(exc)
                return
            self._core.apply_metadata(response, monotonic_ms())
        self._wake()

    async def _run_sender(self, task_status: trio.TaskStatus[None]) -> None:
        async with trio.open_nursery() as requests:
            self._requests = requests
            task_status.started()
            try:
                while True:
                    if self._core.metadata_due(monotonic_ms()):
                        await self._refresh_metadata()
                    if self._core.needs_producer_id:
                        await self._init_producer_id()
                    self._transactions.maybe_add_partitions(requests)
                    ready, wait_ms = self._core.sendable(monotonic_ms(), self._flushing > 0)
                    self._start_requests(ready)
                    if ready:
                        wait_ms = 0.0    # more may be drainable now (batches in flight per
                                         # partition, requests per broker)
                    self._notify()
                    sleep_s = self._sleep_s(wait_ms)
                    self._sender_wakes_at = trio.current_time() + sleep_s
                    with trio.move_on_after(sleep_s):
                        await self._wakeup_wait()
                    self._sender_wakes_at = -math.inf
            finally:
                self._requests = None

    def _dispatch(self) -> None:
        """Start requests for whatever is sendable now, from the task whose send started a
        batch or whose answer freed an in-flight slot, instead of a round through the
        sender task per batch; the sender is woken only when it has something to do: a
        batch that becomes sendable before it would wake by itself, metadata, a producer
        id, or a transaction's partitions."""
        core = self._core
        now = monotonic_ms()
        if (self._requests is None or core.txn is not None or core.needs_producer_id
                or core.metadata_due(now)):
            self._wake()
            return
        flushing = self._flushing > 0
        ready, wait_ms = core.sendable(now, flushing)
        if not ready and wait_ms is None:
            return
        while ready:
            self._start_requests(ready)
            self._notify()
            ready, wait_ms = core.sendable(now, flushing)
        if wait_ms is not None and \
                trio.current_time() + wait_ms / 1000 < self._sender_wakes_at:
            self._wake()

    def _sleep_s(self, wait_ms: float | None) -> float:
        """How long the sender may sleep when nothing wakes it."""
        waits = [] if wait_ms is None else [wait_ms]
        if self._core.needs_metadata:
            waits.append(self.config.retry_backoff_ms)
        elif self._core.metadata_fetched_ms is not None:
            age = monotonic_ms() - self._core.metadata_fetched_ms
            waits.append(max(self.config.metadata_max_age_ms - age, 0))
        return min(waits) / 1000 if waits else 3600.0

    async def _init_producer_id(self) -> None:
        """Get the idempotent producer its id; a failure is retried after a backoff."""
        try:
            response = await self._pool.request_any(
                ApiKey.INIT_PRODUCER_ID, self._core.init_producer_id_request(),
                self._core.cluster.brokers.values())
            error: BaseException | None = self._core.apply_producer_id(response)
        except (KafkaConnectionError, ProtocolError, KafkaError) as exc:
            error = exc if self._core.fatal(exc) else self._core.producer_id_failed(exc)
        if error is not None:
            logger.debug("InitProducerId failed: %s", error)
            await trio.sleep(self.config.retry_backoff_ms / 1000)

    async def _wakeup_wait(self) -> None:
        await self._wakeup.wait()
        self._wakeup = trio.Event()

    def _start_requests(self, ready: dict[int, list[ProducerBatch]]) -> None:
        """Start a request task per drained request. Requests start from several tasks
        (the sender, a send that starts a batch, an answer that frees a slot), and trio
        runs tasks started in one scheduling round in either order; so a task takes the
        oldest request of its broker when it first runs, not the one it was started for,
        and writes it before it yields (or queues on the connection's fair send lock):
        a partition's batches reach the wire in the order they were drained."""
        assert self._requests is not None
        outbox = self._outbox
        for node_id, batches in ready.items():
            queue = outbox.get(node_id)
            if queue is None:
                queue = outbox[node_id] = deque()
            queue.append(batches)
            self._requests.start_soon(self._send_next, node_id)

    async def _send_next(self, node_id: int) -> None:
        batches = self._outbox[node_id].popleft()
        node = self._core.cluster.brokers.get(node_id)
        body = self._core.produce_request(batches)
        try:
            if node is None:
                raise KafkaConnectionError(f"broker {node_id} left the metadata")
            response = await self._pool.request(node, ApiKey.PRODUCE, body)
        except (KafkaConnectionError, KafkaError, ProtocolError) as exc:
            logger.debug("produce to broker %d failed: %s", node_id, exc)
            self._core.handle_failure(node_id, batches, exc, monotonic_ms())
        else:
            self._core.handle_response(node_id, batches, response, monotonic_ms())
        self._notify()
        self._dispatch()

    async def _shutdown(self, flush: bool) -> None:
        self._closed = True
        if flush:
            await self._settle()  # a fatal error was the caller's to see, not close's
        self._core.abort(ProducerClosedError("the producer was closed before sending"))
        self._notify()


@asynccontextmanager
async def open_producer(config: ProducerConfig | Mapping[str, Any] | None = None,
                        **overrides: Any) -> AsyncIterator[Producer]:
    """Run a producer for the block; on exit it flushes (unless the block raised) and
    closes its connections. Config keys are Kafka's (``bootstrap.servers``, ``acks``, ...)."""
    if not isinstance(config, ProducerConfig):
        config = ProducerConfig.from_mapping(config, **overrides)
    producer = Producer(config)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(producer._run_sender)
            ok = False
            try:
                yield producer
                ok = True
            finally:
                with trio.CancelScope(shield=not ok) as scope:
                    if not ok:
                        scope.deadline = trio.current_time() + 1
                    await producer._shutdown(flush=ok)
                nursery.cancel_scope.cancel()
    finally:
        producer._core.abort(ProducerClosedError("the producer was closed before an answer"),
                             include_in_flight=True)
        with trio.CancelScope(shield=True):
            await producer._pool.aclose()
        producer._core.close_interceptors()
