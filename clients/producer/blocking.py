"""The blocking producer: the same core driven synchronously, with no threads.

There is no background sender: ``send`` sends whatever batches are ready (full, or older
than ``linger.ms``) before returning, and ``flush``/``close``/``future.get()`` send the
rest. Records can therefore sit in a batch until the next call; call ``flush`` when a
record must go out now. Produce requests are not waited for: up to
``max.in.flight.requests.per.connection`` per broker stay in flight while ``send`` adds
records, and their answers are settled by later calls.
"""

from __future__ import annotations

import math
import time
from collections import deque
from typing import Any, Iterable, Mapping

from clients.common.cluster import metadata_request
from clients.common.connections import BlockingConnectionPool
from clients.clock import monotonic_ms
from clients.net import KafkaConnectionError
from clients.net.blocking_connection import BlockingKafkaConnection
from clients.net.session import OutgoingRequest
from clients.producer.accumulator import ProducerBatch
from clients.producer.config import ProducerConfig
from clients.producer.core import DeliveryCallback, ProducerCore
from clients.producer.blocking_transactions import BlockingTransactions
from clients.producer.future import DeliveryFuture, RecordMetadata
from clients.producer.transactions import ConsumerGroupMetadata
from clients.protocol import ApiKey, ErrorCode, KafkaError, ProtocolError



class BlockingDeliveryFuture(DeliveryFuture):
    """A DeliveryFuture whose ``get`` sends buffered records and waits for the outcome."""

    def __init__(self, producer: BlockingProducer) -> None:
        # DeliveryFuture keeps its state in class defaults and has no __init__ to call.
        self._producer = producer

    def get(self, timeout: float | None = None) -> RecordMetadata:
        """The RecordMetadata, flushing the producer first if needed; raises the failure."""
        if not self.done():
            self._producer.flush(timeout)
        if not self.done():
            raise KafkaError(ErrorCode.REQUEST_TIMED_OUT,
                             f"the record was not acknowledged within {timeout} s")
        return self.result()


class BlockingProducer:
    """A synchronous producer; config keys are Kafka's (``bootstrap.servers``, ``acks``...)."""

    def __init__(self, config: ProducerConfig | Mapping[str, Any] | None = None,
                 **overrides: Any) -> None:
        if not isinstance(config, ProducerConfig):
            config = ProducerConfig.from_mapping(config, **overrides)
        self.config = config
        self._core = ProducerCore(config)
        self._pool = BlockingConnectionPool(config.bootstrap_servers, config.client_id,
                                            config.request_timeout_ms / 1000,
                                            security=config.security, sasl=config.sasl)
        self._closed = False
        self._next_check_ms = 0.0  # when send() must next look for sendable batches
        # Produce requests sent and not yet answered, oldest first: the producer keeps
        # adding records while the broker works (up to max.in.flight per broker).
        self._in_flight: deque[tuple[int, list[ProducerBatch], BlockingKafkaConnection,
                                     OutgoingRequest]] = deque()
        self._transactions = BlockingTransactions(self._core, self._pool, self.flush)

    # ---- transactions (with transactional.id); see the trio Producer ----

    def init_transactions(self) -> None:
        self._transactions.init()

    def begin_transaction(self) -> None:
        self._transactions.manager.begin()

    def send_offsets_to_transaction(self, offsets: Mapping[tuple[str, int], Any],
                                    group_metadata: ConsumerGroupMetadata | str) -> None:
        self._transactions.send_offsets(offsets, group_metadata)

    def commit_transaction(self) -> None:
        self._transactions.end(commit=True)

    def abort_transaction(self) -> None:
        self._transactions.end(commit=False)

    def send(self, topic: str, value: Any, key: Any = None,
             headers: Iterable[tuple[str, Any]] | None = None, partition: int | None = None,
             timestamp: int | None = None, callback: DeliveryCallback | None = None
             ) -> BlockingDeliveryFuture:
        """Queue one record and send any batches that are ready; see the trio ``send``."""
        if self._closed:
            raise RuntimeError("cannot send after the producer is closed")
        core = self._core
        core.check_fatal()
        if core.txn is not None:
            core.check_transaction()
        interceptors = self.config.interceptors
        if interceptors:
            topic, value, key, headers, partition, timestamp = core.intercept(
                topic, value, key, headers, partition, timestamp)
        future = BlockingDeliveryFuture(self)
        blocked_since: float | None = None
        try:
            now = monotonic_ms()
            appended = core.append(topic, value, key, headers, partition, timestamp, future,
                                   now)
            if appended is None:
                if not core.topic_ready(topic):
                    blocked_since = time.monotonic()
                    self._wait_for_topic(topic)
                if not core.has_room():
                    self._wait_for_room(blocked_since)
                now = monotonic_ms()
                appended = core.append(topic, value, key, headers, partition, timestamp,
                                       future, now)
                assert appended is not None, "ready and with room, nothing else ran since"
        except Exception as exc:
            core.send_failed(exc)
            raise
        _, created = appended
        if callback is not None or interceptors:
            core.watch(future, callback)
        # Nothing can have become sendable unless this record started a batch (the one before
        # may be full) or the time the last check named has come: skip the scan otherwise.
        if created or now >= self._next_check_ms:
            wait_ms = self._send_ready(flushing=False)
            if self._in_flight:
                # Answers free in-flight slots: look for them again after linger.ms.
                linger = max(self.config.linger_ms, 1)
                wait_ms = linger if wait_ms is None else min(wait_ms, linger)
            self._next_check_ms = math.inf if wait_ms is None else monotonic_ms() + wait_ms
        return future

    def flush(self, timeout: float | None = None) -> None:
        """Send every buffered record and wait until each is settled (or ``timeout`` s);
        raises the FatalConnectionError that ended the producer, if one did."""
        self._flush(timeout)
        self._core.check_fatal()

    def _flush(self, timeout: float | None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._core.idle():
            wait_ms = self._send_ready(flushing=True)
            if self._core.idle():
                return
            if deadline is not None and time.monotonic() >= deadline:
                return
            if self._in_flight:
                self._collect(wait=True)
                continue
            # Only retried batches in backoff (or unknown leaders) remain: wait them out.
            pause = self.config.retry_backoff_ms if wait_ms is None else wait_ms
            if deadline is not None:
                pause = min(pause, max(deadline - time.monotonic(), 0) * 1000)
            time.sleep(pause / 1000)

    def partitions_for(self, topic: str) -> list[int]:
        self._wait_for_topic(topic)
        return sorted(self._core.cluster.topics[topic].partitions)

    def close(self, timeout: float | None = None) -> None:
        """Flush (bounded by ``timeout`` s) and close the connections."""
        if self._closed:
            return
        self._closed = True
        try:
            self._flush(timeout)
        finally:
            self._core.abort(RuntimeError("the producer was closed before sending"),
                             include_in_flight=True)
            self._pool.close()
            self._core.close_interceptors()

    def __enter__(self) -> BlockingProducer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _wait_for_room(self, blocked_since: float | None = None) -> None:
        """Send batches (all are sendable while the buffer is full) until buffer.memory
        has room; BufferExhaustedError once max.block.ms has passed since ``send`` began
        to block (on the topic's metadata, or here)."""
        deadline = (time.monotonic() if blocked_since is None else blocked_since) \
            + self.config.max_block_ms / 1000
        while True:
            wait_ms = self._send_ready(flushing=False)
            if self._core.has_room():
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._core.buffer_exhausted()
            if self._in_flight:
                self._collect(wait=True)
                continue
            # Only batches in retry backoff (or without a leader) hold the memory now.
            pause = self.config.retry_backoff_ms if not wait_ms else wait_ms
            time.sleep(min(pause / 1000, remaining))

    def _wait_for_topic(self, topic: str) -> None:
        if self._core.topic_ready(topic):
            return
        deadline = time.monotonic() + self.config.max_block_ms / 1000
        while True:
            self._refresh_metadata()
            self._core.check_fatal()
            if self._core.topic_ready(topic):
                return
            failure = self._core.topic_failure(topic)
            if failure is not None:
                raise failure
            if time.monotonic() >= deadline:
                raise KafkaError(ErrorCode.REQUEST_TIMED_OUT,
                                 f"topic {topic!r} not present in metadata after "
                                 f"{self.config.max_block_ms} ms")
            time.sleep(min(self.config.retry_backoff_ms / 1000,
                           max(deadline - time.monotonic(), 0)))

    def _refresh_metadata(self) -> None:
        body = metadata_request(sorted(self._core.topics), allow_auto_topic_creation=True)
        try:
            response = self._pool.request_any(ApiKey.METADATA, body,
                                              self._core.cluster.brokers.values())
        except (KafkaConnectionError, KafkaError, ProtocolError) as exc:
            self._core.metadata_failed(exc)
            return
        self._core.apply_metadata(response, monotonic_ms())

    def _init_producer_id(self) -> bool:
        """Get the idempotent producer its id; False (retry later) when that failed."""
        try:
            response = self._pool.request_any(
                ApiKey.INIT_PRODUCER_ID, self._core.init_producer_id_request(),
                self._core.cluster.brokers.values())
        except (KafkaConnectionError, ProtocolError, KafkaError) as exc:
            if not self._core.fatal(exc):
                self._core.producer_id_failed(exc)
            return False
        return self._core.apply_producer_id(response) is None

    def _send_ready(self, flushing: bool) -> float | None:
        """Settle the answers that have arrived, then send each ready leader its batches
        without waiting for the answer; returns the ms until more may become ready."""
        if self._in_flight:
            self._collect(wait=False)
        if self._core.metadata_due(monotonic_ms()):
            self._refresh_metadata()
        if self._core.needs_producer_id and not self._init_producer_id():
            return self.config.retry_backoff_ms
        self._transactions.add_pending_partitions()
        ready, wait_ms = self._core.sendable(monotonic_ms(), flushing)
        for node_id, batches in ready.items():
            node = self._core.cluster.brokers.get(node_id)
            body = self._core.produce_request(batches)
            try:
                if node is None:
                    raise KafkaConnectionError(f"broker {node_id} left the metadata")
                conn = self._pool.connection(node)
                outgoing = conn.send(ApiKey.PRODUCE, body)
            except (KafkaConnectionError, KafkaError, ProtocolError) as exc:
                self._core.handle_failure(node_id, batches, exc, monotonic_ms())
            else:
                self._in_flight.append((node_id, batches, conn, outgoing))
        return 0.0 if ready else wait_ms

    def _collect(self, wait: bool) -> None:
        """Settle every Produce request whose answer has arrived, each connection's in the
        order sent; with ``wait``, first wait for the oldest (up to request.timeout.ms)."""
        waiting: set[int] = set()     # connections with an answer still to come
        settled = False
        for entry in list(self._in_flight):
            # A delivery callback may send, and so settle answers itself: skip those.
            if entry not in self._in_flight:
                continue
            node_id, batches, conn, outgoing = entry
            if id(conn) in waiting:
                continue
            try:
                response = conn.receive(outgoing, wait=wait and not settled)
            except (KafkaConnectionError, KafkaError, ProtocolError) as exc:
                self._in_flight.remove(entry)
                settled = True
                self._core.handle_failure(node_id, batches, exc, monotonic_ms())
                continue
            if response is None:
                waiting.add(id(conn))
                continue
            self._in_flight.remove(entry)
            settled = True
            self._core.handle_response(node_id, batches, response, monotonic_ms())
