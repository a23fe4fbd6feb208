"""The producer's I/O-free logic, shared by the trio and the blocking producer.

It owns the cluster view, the partitioner and the accumulator; it builds Produce requests
from drained batches and settles batches from the answers. The drivers only move bytes,
keep time and decide when to refresh metadata (``needs_metadata``).
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from clients.common.cluster import ClusterMetadata
from clients.clock import monotonic_ms, wall_clock_ms
from clients.interceptors import chain, notify
from clients.net import FatalConnectionError, KafkaConnectionError
from clients.net.failure_log import RepeatedFailureLog
from clients.partitioner import StickyPartitioner, partition_for_key
from clients.producer.accumulator import ProducerBatch, RecordAccumulator
from clients.producer.config import ProducerConfig
from clients.producer.future import DeliveryFuture, RecordMetadata
from clients.producer.idempotence import IdempotenceState
from clients.producer.sequencing import SEQUENCE_ERRORS, SequencingMixin
from clients.producer.transactions import TransactionManager
from clients.protocol import ErrorCode, KafkaError
from clients.records.record import Header

logger = logging.getLogger(__name__)

# Errors after which the partition's leader may have moved: refresh metadata before retrying.
_METADATA_ERRORS = frozenset({
    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH,
    ErrorCode.NOT_ENOUGH_REPLICAS,
})


# Length, attributes, timestamp and offset deltas, key/value lengths and header count, at
# their largest varint sizes.
_RECORD_OVERHEAD_BOUND = 5 + 1 + 10 + 5 + 5 + 5 + 5


class BufferExhaustedError(KafkaError):
    """``send`` found no room in ``buffer.memory`` within ``max.block.ms``."""


@dataclass(frozen=True)
class ProducerRecord:
    """A record as ``send`` got it, before serialization: what producer interceptors'
    ``on_send`` receives and returns."""

    topic: str
    value: Any
    key: Any = None
    headers: Iterable[tuple[str, Any]] | None = None
    partition: int | None = None
    timestamp: int | None = None


# A delivery callback: ``callback(metadata, error)``, one of them None.
DeliveryCallback = Callable[[RecordMetadata | None, BaseException | None], None]


def retry_backoff_ms(attempts: int, base_ms: int, max_ms: int, jitter: float) -> float:
    """Kafka's exponential retry backoff (KIP-580): ``retry.backoff.ms`` doubling with each
    attempt up to ``retry.backoff.max.ms``, times ``jitter`` (0.8 to 1.2), never above
    the maximum."""
    if base_ms <= 0:
        return 0.0
    grown = base_ms * 2 ** min(max(attempts - 1, 0), 30)
    return min(min(grown, max_ms) * jitter, max_ms)


def as_bytes(value: bytes | bytearray | memoryview | str | None) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


def normalise_headers(headers: Iterable[tuple[str, Any]] | None) -> tuple[Header, ...]:
    if not headers:
        return ()
    return tuple((str(k), as_bytes(v)) for k, v in headers)


def estimate_record_size(key: bytes | None, value: bytes | None,
                         headers: Sequence[Header]) -> int:
    """An upper bound of the record's encoded size, without encoding it."""
    size = _RECORD_OVERHEAD_BOUND + len(key or b"") + len(value or b"")
    for name, data in headers:
        size += 10 + len(name.encode()) + len(data or b"")
    return size


class ProducerCore(SequencingMixin):
    """Partitioning, batching and Produce request/response handling."""

    def __init__(self, config: ProducerConfig) -> None:
        self.config = config
        self.cluster = ClusterMetadata()
        self.metadata_fetched_ms: float | None = None
        self.topics: set[str] = set()
        # Partition count per known topic, rebuilt with each metadata answer: the record
        # path looks a topic up once, here, instead of walking the metadata.
        self._counts: dict[str, int] = {}
        self.needs_metadata = False
        # A refused authentication or TLS handshake, or a security protocol mismatch:
        # retrying cannot help, so every later send and flush raises it.
        self.fatal_error: FatalConnectionError | None = None
        self._metadata_log = RepeatedFailureLog(
            logger, "metadata refresh", "retrying until max.block.ms or delivery.timeout.ms")
        self.partitioner = StickyPartitioner(config.batch_size,
                                             adaptive=config.adaptive_partitioning)
        # When each leader first had a batch ready that was not drained (for
        # partitioner.availability.timeout.ms); cleared when it is drained.
        self._ready_since: dict[int, float] = {}
        idempotent = config.enable_idempotence
        # As Kafka's producer: up to max.in.flight batches of a partition in flight, so
        # one partition is not held to a batch per round trip. Without idempotence a retry
        # may then overtake a later batch (Kafka's documented risk of that setting).
        self._serializing = (config.key_serializer is not None
                             or config.value_serializer is not None)
        # A record larger than either limit can never be sent.
        self._largest_record = min(config.max_request_size, config.buffer_memory)
        self.accumulator = RecordAccumulator(
            config.batch_size, config.linger_ms, config.compression,
            config.max_in_flight == 1,
            in_flight_per_partition=config.max_in_flight)
        self.in_flight: dict[int, int] = {}
        self.idempotence: IdempotenceState | None = (
            IdempotenceState(config.transactional_id is not None) if idempotent else None)
        # Set by a transactional producer: partitions whose batches must wait (not yet
        # added to the transaction), and who hears of batches that failed for good.
        self.held: Callable[[tuple[str, int]], bool] | None = None
        self.on_batch_failed: Callable[[ProducerBatch, BaseException], None] | None = None
        self.txn: TransactionManager | None = None
        if config.transactional_id is not None:
            assert self.idempotence is not None
            txn = self.txn = TransactionManager(config.transactional_id,
                                                config.transaction_timeout_ms,
                                                self.idempotence)
            self.held = txn.held
            self.on_batch_failed = lambda batch, error: txn.batch_failed(
                error, batch.stamped is not None)

    # ---- metadata ----

    def metadata_due(self, now: float) -> bool:
        """Whether a Metadata request should go out now."""
        if self.needs_metadata or self.metadata_fetched_ms is None:
            return bool(self.topics)
        return now - self.metadata_fetched_ms >= self.config.metadata_max_age_ms

    def metadata_failed(self, error: BaseException) -> None:
        """A metadata refresh failed (the drivers retry every ``retry.backoff.ms``)."""
        if not self.fatal(error):
            self._metadata_log.failed(error)

    def fatal(self, error: BaseException) -> bool:
        """Whether ``error`` is fatal; the first fatal one fails every unsent record and
        is kept for ``check_fatal``."""
        if not isinstance(error, FatalConnectionError):
            return False
        if self.fatal_error is None:
            self.fatal_error = error
            self.abort(error)
        return True

    def check_fatal(self) -> None:
        """Raise the fatal error that ended the producer, if any."""
        if self.fatal_error is not None:
            raise self.fatal_error

    def apply_metadata(self, response: dict[str, Any], now: float) -> None:
        self._metadata_log.succeeded()
        self.cluster = self.cluster.merged_with(ClusterMetadata.from_response(response))
        self.metadata_fetched_ms = now
        counts = {t: self.cluster.partition_count(t) for t in self.topics}
        self._counts = {t: c for t, c in counts.items() if c is not None}
        self.needs_metadata = len(self._counts) < len(self.topics)

    def topic_ready(self, topic: str) -> bool:
        """Whether ``topic``'s partitions are known (else the driver must fetch metadata)."""
        if topic in self._counts:
            return True
        self.topics.add(topic)
        count = self.cluster.partition_count(topic)
        if count is not None:
            self._counts[topic] = count
        else:
            self.needs_metadata = True
            return False
        return True

    def topic_failure(self, topic: str) -> KafkaError | None:
        """A non-retriable metadata error for ``topic`` (such as an invalid name), if any."""
        error = self.cluster.topic_error(topic)
        if error is not None and topic in self.cluster.topics and not error.retriable:
            return KafkaError(error, f"topic {topic!r}: {error.message}")
        return None

    # ---- appending ----

    def intercept(self, topic: str, value: Any, key: Any,
                  headers: Iterable[tuple[str, Any]] | None, partition: int | None,
                  timestamp: int | None) -> tuple[str, Any, Any, Any, int | None, int | None]:
        """The record's fields after every interceptor's ``on_send`` (first in Kafka's
        pipeline), which gets and returns a ProducerRecord."""
        r = chain(self.config.interceptors, "on_send",
                  ProducerRecord(topic, value, key, headers, partition, timestamp))
        return r.topic, r.value, r.key, r.headers, r.partition, r.timestamp

    def send_failed(self, error: BaseException) -> None:
        """A record failed before reaching a batch: interceptors hear of it, as in Kafka."""
        if self.config.interceptors:
            notify(self.config.interceptors, "on_acknowledgement", None, error)

    def close_interceptors(self) -> None:
        notify(self.config.interceptors, "close")

    def watch(self, future: DeliveryFuture, callback: DeliveryCallback | None) -> None:
        """Run interceptors' ``on_acknowledgement`` and then ``callback`` when the record
        is settled."""
        interceptors = self.config.interceptors
        if not interceptors and callback is None:
            return

        def settled(f: DeliveryFuture) -> None:
            error = f.exception()
            metadata = None if error is not None else f.result()
            if interceptors:
                notify(interceptors, "on_acknowledgement", metadata, error)
            if callback is not None:
                try:
                    callback(metadata, error)
                except Exception:
                    logger.exception("delivery callback %r failed", callback)
        future.add_callback(settled)

    def has_room(self) -> bool:
        """Whether ``buffer.memory`` has room for another record; when not, every batch
        becomes sendable (so room frees up) until it has."""
        room = self.accumulator.buffered_bytes < self.config.buffer_memory
        self.accumulator.exhausted = not room
        return room

    def buffer_exhausted(self) -> BufferExhaustedError:
        return BufferExhaustedError(
            ErrorCode.REQUEST_TIMED_OUT,
            f"failed to allocate memory within max.block.ms ({self.config.max_block_ms} ms): "
            f"buffer.memory ({self.config.buffer_memory} bytes) is full")

    def choose_partition(self, topic: str, key: bytes | None, partition: int | None,
                         count: int | None = None) -> int:
        if count is None:
            count = self._counts.get(topic)
        assert count is not None, "topic_ready must be checked first"
        if partition is not None:
            if not 0 <= partition < count:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                 f"partition {partition} is not in topic {topic!r} "
                                 f"({count} partitions)")
            return partition
        if key is not None and not self.config.ignore_keys:
            return partition_for_key(key, count)
        return self.partitioner.partition(topic, count, self._available(topic))

    def _available(self, topic: str) -> list[int]:
        """Partitions with a leader, leaving out (with partitioner.availability.timeout.ms)
        those whose leader has had data ready but not taken it for that long."""
        available = self.cluster.available_partitions(topic)
        timeout = self.config.availability_timeout_ms
        if not timeout or not self._ready_since:
            return available
        now = monotonic_ms()
        slow = {n for n, since in self._ready_since.items() if now - since > timeout}
        if not slow:
            return available
        info = self.cluster.topics[topic].partitions
        return [p for p in available if info[p].leader not in slow]

    def append(self, topic: str, value: Any, key: Any, headers: Iterable[tuple[str, Any]] | None,
               partition: int | None, timestamp: int | None, future: DeliveryFuture,
               now: float | Callable[[], float]) -> tuple[ProducerBatch, bool] | None:
        """Serialize, partition and batch one record; returns its batch and whether that
        batch was started by this record. ``now`` is the time (ms), or a clock read only if
        a batch starts. Returns None, having done nothing, when the topic's metadata is not
        known or buffer.memory is full: the driver then waits until ``topic_ready`` and
        ``has_room`` and calls again."""
        # Once per record: the readiness check and the append are one call, plain bytes
        # without serializers or headers take the shortest path, and the topic's partition
        # count is looked up once.
        config = self.config
        count = self._counts.get(topic)
        accumulator = self.accumulator
        if count is None or accumulator.exhausted \
                or accumulator.buffered_bytes >= config.buffer_memory:
            return None
        if self._serializing:
            if config.key_serializer is not None:
                key = config.key_serializer(topic, key)
            if config.value_serializer is not None:
                value = config.value_serializer(topic, value)
        size = _RECORD_OVERHEAD_BOUND
        if key is not None:
            if type(key) is not bytes:
                key = as_bytes(key)
            size += len(key)  # type: ignore[arg-type]
        if value is not None:
            if type(value) is not bytes:
                value = as_bytes(value)
            size += len(value)  # type: ignore[arg-type]
        if headers:
            header_t = normalise_headers(headers)
            size = estimate_record_size(key, value, header_t)
        else:
            header_t = ()
        if size > self._largest_record:
            limit = ("max.request.size", config.max_request_size) \
                if size > config.max_request_size else ("buffer.memory", config.buffer_memory)
            raise KafkaError(ErrorCode.MESSAGE_TOO_LARGE,
                             f"the record is {size} bytes, larger than {limit[0]} ({limit[1]})")
        sticky = partition is None and (key is None or config.ignore_keys)
        if partition is not None and 0 <= partition < count:
            chosen = partition
        else:
            chosen = self.choose_partition(topic, key, partition, count)
        if self.txn is not None:
            self.txn.add_partition((topic, chosen))
        stamp = wall_clock_ms() if timestamp is None else int(timestamp)
        batch, created = accumulator.append(topic, chosen, stamp, key, value, header_t, future,
                                            now, size)
        if sticky:
            partitioner = self.partitioner
            if partitioner.needs_switch(topic, size):
                queues = accumulator.queue_sizes(topic) if partitioner.adaptive else None
                partitioner.record_produced(topic, chosen, size, count,
                                            self._available(topic), queues)
            else:
                partitioner.record_produced(topic, chosen, size, count)
        return batch, created

    # ---- sending ----

    def sendable(self, now: float, flushing: bool) -> tuple[dict[int, list[ProducerBatch]],
                                                             float | None]:
        """Drain batches for every ready leader with a free in-flight slot.

        Returns (batches by leader id, ms until something may become ready or None).
        """
        for batch in self.accumulator.expired(now, self.config.delivery_timeout_ms):
            self._sequences_broken(batch, KafkaError(ErrorCode.REQUEST_TIMED_OUT, "expired"))
            batch.fail(KafkaError(ErrorCode.REQUEST_TIMED_OUT,
                                  f"expiring {len(batch.futures)} record(s) for "
                                  f"{batch.topic}-{batch.partition}: delivery.timeout.ms "
                                  f"({self.config.delivery_timeout_ms}) has passed"))
        txn = self.txn
        if txn is not None and txn.in_error and self.accumulator:
            # Nothing more of a failed transaction may be written: fail what waits, so a
            # flush (and commit_transaction, which then raises) ends.
            assert txn.error is not None
            self.abort_unsent(txn.error)
        if not self._ready_to_sequence():
            return {}, None
        nodes, wait, unknown = self.accumulator.ready(self.cluster, now, flushing, self.held)
        if unknown:
            self.needs_metadata = True
        out: dict[int, list[ProducerBatch]] = {}
        stamp = self._stamp if self.idempotence is not None else None
        for node_id in nodes:
            if self.in_flight.get(node_id, 0) >= self.config.max_in_flight:
                self._ready_since.setdefault(node_id, now)
                continue
            self._ready_since.pop(node_id, None)
            batches = self.accumulator.drain(self.cluster, node_id,
                                             self.config.max_request_size, now, flushing,
                                             stamp, self.held)
            if batches:
                self.in_flight[node_id] = self.in_flight.get(node_id, 0) + 1
                out[node_id] = batches
        return out, wait

    def produce_request(self, batches: Sequence[ProducerBatch]) -> dict[str, Any]:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for batch in batches:
            by_topic.setdefault(batch.topic, []).append(
                {"index": batch.partition, "records": batch.wire_bytes()})
        return {
            "transactional_id": self.config.transactional_id,
            "acks": self.config.acks,
            "timeout_ms": self.config.request_timeout_ms,
            "topic_data": [{"name": t, "partition_data": p} for t, p in by_topic.items()],
        }

    def handle_response(self, node_id: int, batches: Sequence[ProducerBatch],
                        response: dict[str, Any], now: float) -> None:
        """Settle each batch from a Produce answer ({} for acks=0)."""
        self._release(node_id)
        if self.config.acks == 0:
            for batch in batches:
                self.accumulator.complete(batch)
                batch.succeed(-1, -1)
            return
        results = {(t["name"], p["index"]): p
                   for t in response.get("responses", ())
                   for p in t["partition_responses"]}
        for batch in batches:
            result = results.get(batch.tp)
            if result is None:
                self._retry_or_fail(batch, KafkaError(
                    ErrorCode.UNKNOWN_SERVER_ERROR,
                    f"the Produce answer had no result for {batch.topic}-{batch.partition}"),
                    now)
                continue
            code = ErrorCode.from_code(result["error_code"])
            if code == ErrorCode.NONE:
                self._succeeded(batch, result["base_offset"], result.get("log_append_time_ms", -1))
                continue
            if code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER:
                # Already written by an earlier attempt; the broker no longer knows where.
                self._succeeded(batch, -1, -1)
                continue
            message = result.get("error_message") or code.message
            if code in SEQUENCE_ERRORS and self._sequence_error(batch, code, message, now):
                continue
            if code == ErrorCode.MESSAGE_TOO_LARGE and len(batch.futures) > 1:
                if self.idempotence is not None:
                    # The parts need sequences of their own, and the batches after the
                    # refused one fail with a gap: start every partition afresh.
                    self._sequences_broken(batch, KafkaError(code, message))
                # As Kafka's producer does: retry the records in smaller batches, so only a
                # record that can never fit fails.
                parts = self.accumulator.split(batch)
                logger.debug("%s-%d refused a batch of %d records as too large; split into "
                             "%d", batch.topic, batch.partition, len(batch.futures),
                             len(parts))
                continue
            if code in _METADATA_ERRORS:
                self.needs_metadata = True
            self._retry_or_fail(batch, KafkaError(code, message), now)

    def handle_failure(self, node_id: int, batches: Sequence[ProducerBatch],
                       error: BaseException, now: float) -> None:
        """Settle batches whose request failed without an answer."""
        self._release(node_id)
        self.needs_metadata = True
        if self.fatal(error):
            for batch in batches:
                self.fail_batch(batch, error)
            return
        if isinstance(error, KafkaConnectionError):
            error = KafkaError(ErrorCode.NETWORK_EXCEPTION, str(error))
        for batch in batches:
            self._retry_or_fail(batch, error, now)

    def _release(self, node_id: int) -> None:
        self.in_flight[node_id] = max(self.in_flight.get(node_id, 1) - 1, 0)

    def _retry_or_fail(self, batch: ProducerBatch, error: BaseException, now: float) -> None:
        retriable = isinstance(error, KafkaError) and error.retriable
        expired = now - batch.created_ms >= self.config.delivery_timeout_ms
        if retriable and batch.attempts <= self.config.retries and not expired:
            logger.debug("retrying %s-%d (attempt %d): %s", batch.topic, batch.partition,
                         batch.attempts + 1, error)
            self._retry(batch, now)
            return
        self.fail_batch(batch, error)

    def _retry(self, batch: ProducerBatch, now: float) -> None:
        backoff = retry_backoff_ms(batch.attempts, self.config.retry_backoff_ms,
                                   self.config.retry_backoff_max_ms, random.uniform(0.8, 1.2))
        self.accumulator.retry_later(batch, now + backoff)

    def fail_batch(self, batch: ProducerBatch, error: BaseException) -> None:
        """Settle a batch as failed for good."""
        self.accumulator.complete(batch)
        self._sequences_broken(batch, error)
        batch.fail(error)

    # ---- state ----

    def idle(self) -> bool:
        """Nothing buffered and nothing in flight."""
        return not self.accumulator and not any(self.in_flight.values())

    def abort(self, error: BaseException, include_in_flight: bool = False) -> None:
        """Fail buffered batches (and in-flight ones too when the sender is gone)."""
        self.accumulator.abort_all(error, include_in_flight)
