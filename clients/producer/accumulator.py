"""Per-partition record batches waiting to be sent (pure: the caller supplies the time).

Records are appended to the newest batch of their partition until it reaches
``batch.size``. A partition's oldest batch is ready to send once it is full, has lingered
``linger.ms``, a flush is asked for, or (for a retried batch) its backoff has passed.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

from clients.common.cluster import ClusterMetadata
from clients.producer.future import DeliveryFuture
from clients.records.batch import decode_batch
from clients.records.builder import BatchBuilder
from clients.records.header import LOG_OVERHEAD
from clients.records.record import Header

TopicPartition = tuple[str, int]
# Stamps a drained batch with producer id, epoch and sequence (idempotence).
Stamper = Callable[["ProducerBatch"], None]


@dataclass(eq=False)
class ProducerBatch:
    """One batch and the futures of its records."""

    topic: str
    partition: int
    builder: BatchBuilder
    created_ms: float
    futures: list[tuple[DeliveryFuture, int, int]] = field(default_factory=list)
    attempts: int = 0
    retry_at_ms: float = 0.0
    sent_to: int = -1          # the leader its last attempt went to
    in_flight: bool = False
    reserved: int = 0          # bytes counted against buffer.memory
    # (producer id, epoch, base sequence) last stamped into ``payload``, the bytes sent.
    stamped: tuple[int, int, int] | None = None
    payload: bytes | None = None

    @property
    def records(self) -> int:
        return len(self.futures)

    def wire_bytes(self) -> bytes:
        """The bytes to send: the built batch, with producer state when stamped."""
        return self.payload if self.payload is not None else self.builder.build()

    @property
    def tp(self) -> TopicPartition:
        return self.topic, self.partition

    def succeed(self, base_offset: int, log_append_time_ms: int) -> None:
        DeliveryFuture.succeed_batch(self.futures, self.topic, self.partition, base_offset,
                                     log_append_time_ms)

    def fail(self, error: BaseException) -> None:
        for future, _, _ in self.futures:
            future.set_exception(error)


class RecordAccumulator:
    """Batches per partition, oldest first."""

    def __init__(self, batch_size: int, linger_ms: int, compression: int,
                 guarantee_order: bool, in_flight_per_partition: int = 1) -> None:
        self.batch_size = batch_size
        # Batches of one partition that may be in flight at once. More than one keeps its
        # order across retries only with idempotence, where the broker refuses a sequence
        # gap.
        self.in_flight_per_partition = max(in_flight_per_partition, 1)
        self.linger_ms = linger_ms
        self.compression = compression
        # With max.in.flight=1, a partition with a batch in flight is muted so a retry
        # cannot overtake it (Kafka's ordering guarantee for that setting).
        self.guarantee_order = guarantee_order
        self._batches: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._muted: set[TopicPartition] = set()
        # Bytes of the records buffered or in flight (buffer.memory), and whether a send
        # waits for room: then every batch is sendable at once, as in Kafka.
        self.buffered_bytes = 0
        self.exhausted = False

    def append(self, topic: str, partition: int, timestamp: int, key: bytes | None,
               value: bytes | None, headers: Sequence[Header], future: DeliveryFuture,
               now_ms: float | Callable[[], float], size: int = 0
               ) -> tuple[ProducerBatch, bool]:
        """Add a record (``size`` bytes against buffer.memory); returns its batch and
        whether that batch was newly created. ``now_ms`` is the time, or a clock read only
        when a batch starts."""
        self.buffered_bytes += size
        tp = (topic, partition)
        queue = self._batches.get(tp)
        if queue is None:
            queue = self._batches[tp] = deque()
        elif queue:
            # A batch drained before (retried or split) has a built, closed builder, which
            # takes no more records.
            last = queue[-1]
            if not last.in_flight:
                delta = last.builder.try_append(timestamp, key, value, headers)
                if delta is not None:
                    last.futures.append((future, delta, timestamp))
                    last.reserved += size
                    return last, False
        builder = BatchBuilder(max_bytes=max(self.batch_size, 1), compression=self.compression)
        created_ms = now_ms() if callable(now_ms) else now_ms
        batch = ProducerBatch(topic, partition, builder, created_ms, reserved=size)
        batch.futures.append((future, builder.append(timestamp, key, value, headers),
                              timestamp))
        queue.append(batch)
        return batch, True

    def _head(self, tp: TopicPartition) -> ProducerBatch | None:
        """The partition's next batch to send: the oldest not in flight, while fewer than
        ``in_flight_per_partition`` are."""
        queue = self._batches.get(tp)
        if not queue or tp in self._muted:
            return None
        flying = 0
        for batch in queue:
            if not batch.in_flight:
                return batch
            flying += 1
            if flying >= self.in_flight_per_partition:
                return None
        return None

    def in_flight_count(self) -> int:
        return sum(1 for batch in self if batch.in_flight)

    def partitions(self) -> list[TopicPartition]:
        return list(self._batches)

    def _sendable_at(self, tp: TopicPartition, head: ProducerBatch, flushing: bool,
                     leader: int) -> float:
        """When the head batch may be sent (ms on the caller's clock) to ``leader``."""
        if head.attempts:
            # As Kafka's producer does (KIP-951): no backoff once the leader has moved,
            # else a batch that kept meeting the old leader waits out its longest backoff
            # after metadata names the new one.
            return head.retry_at_ms if leader == head.sent_to else 0.0
        queue = self._batches[tp]
        # A closed builder before any attempt is a split batch: its records have lingered.
        if (flushing or self.exhausted or queue[-1] is not head
                or head.builder.estimated_size >= self.batch_size or head.builder.is_closed):
            return 0.0
        return head.created_ms + self.linger_ms

    def ready(self, cluster: ClusterMetadata, now_ms: float, flushing: bool,
              held: Callable[[TopicPartition], bool] | None = None
              ) -> tuple[set[int], float | None, set[str]]:
        """(leaders with a sendable batch, ms until the next batch may become sendable or
        None, topics whose partition leader is unknown). ``held`` partitions are skipped."""
        nodes: set[int] = set()
        next_ms: float | None = None
        unknown: set[str] = set()
        for tp in self._batches:
            head = self._head(tp)
            if head is None or (held is not None and held(tp)):
                continue
            leader = cluster.leader_for(*tp)
            if leader is None:
                unknown.add(tp[0])
                continue
            at = self._sendable_at(tp, head, flushing, leader.node_id)
            if at <= now_ms:
                nodes.add(leader.node_id)
            else:
                wait = at - now_ms
                next_ms = wait if next_ms is None else min(next_ms, wait)
        return nodes, next_ms, unknown

    def drain(self, cluster: ClusterMetadata, node_id: int, max_request_size: int,
              now_ms: float, flushing: bool, stamp: Stamper | None = None,
              held: Callable[[TopicPartition], bool] | None = None) -> list[ProducerBatch]:
        """Take at most one sendable batch per partition led by ``node_id``, up to
        ``max_request_size`` bytes (the first batch is always taken); ``stamp`` gives each
        its producer state, in the order batches leave."""
        taken: list[ProducerBatch] = []
        size = 0
        for tp in list(self._batches):
            head = self._head(tp)
            if head is None or (held is not None and held(tp)):
                continue
            leader = cluster.leader_for(*tp)
            if leader is None or leader.node_id != node_id:
                continue
            if self._sendable_at(tp, head, flushing, node_id) > now_ms:
                continue
            batch_bytes = len(head.builder.build()) + LOG_OVERHEAD
            if taken and size + batch_bytes > max_request_size:
                break
            if stamp is not None:
                stamp(head)
            size += batch_bytes
            head.in_flight = True
            head.attempts += 1
            head.sent_to = node_id
            if self.guarantee_order:
                self._muted.add(tp)
            taken.append(head)
        return taken

    def complete(self, batch: ProducerBatch) -> None:
        """Forget a batch that succeeded or failed for good."""
        queue = self._batches.get(batch.tp)
        if queue is not None:
            try:
                queue.remove(batch)
            except ValueError:
                pass
            else:
                self.buffered_bytes -= batch.reserved
            if not queue:
                del self._batches[batch.tp]
        self._muted.discard(batch.tp)

    def retry_later(self, batch: ProducerBatch, retry_at_ms: float) -> None:
        """Put a failed in-flight batch back at its partition's head for another try."""
        batch.in_flight = False
        batch.retry_at_ms = retry_at_ms
        self._muted.discard(batch.tp)

    def split(self, batch: ProducerBatch) -> list[ProducerBatch]:
        """Replace a refused in-flight batch of two or more records by smaller batches at its
        place in the queue, each at most half its size or a single record, so that repeated
        splits isolate a record that can never fit. Returns the new batches, oldest first.

        Runs only on the MESSAGE_TOO_LARGE path: the records are decoded back from the
        batch's bytes rather than kept beside them on every append.
        """
        records = decode_batch(batch.builder.build(), verify_crc=False).records
        half = max(batch.builder.estimated_size // 2, 1)
        parts: list[ProducerBatch] = []
        for record, (future, _, timestamp) in zip(records, batch.futures):
            headers = record.headers
            delta = None
            if parts:
                delta = parts[-1].builder.try_append(timestamp, record.key, record.value,
                                                     headers)
            if delta is None:
                builder = BatchBuilder(max_bytes=half, compression=self.compression)
                # Keep the creation time: delivery.timeout.ms still counts from the send.
                parts.append(ProducerBatch(batch.topic, batch.partition, builder,
                                           batch.created_ms))
                delta = builder.append(timestamp, record.key, record.value, headers)
            parts[-1].futures.append((future, delta, timestamp))
        for part in parts:
            part.builder.build()  # closed: later records must not join a split batch
        share, rest = divmod(batch.reserved, len(parts))
        for part in parts:
            part.reserved = share
        parts[-1].reserved += rest
        queue = self._batches.setdefault(batch.tp, deque())
        try:
            index = queue.index(batch)
            del queue[index]
        except ValueError:
            index = 0
        for offset, part in enumerate(parts):
            queue.insert(index + offset, part)
        self._muted.discard(batch.tp)
        return parts

    def expired(self, now_ms: float, delivery_timeout_ms: int) -> list[ProducerBatch]:
        """Remove and return batches not in flight that are older than the timeout."""
        out: list[ProducerBatch] = []
        for tp in list(self._batches):
            queue = self._batches[tp]
            # Oldest first (a split or retried batch keeps its place and creation time):
            # stop at the first young one rather than walk a long queue on every call.
            old = []
            for batch in queue:
                if now_ms - batch.created_ms < delivery_timeout_ms:
                    break
                if not batch.in_flight:
                    old.append(batch)
            for batch in old:
                queue.remove(batch)
                self.buffered_bytes -= batch.reserved
            out += old
            if not queue:
                del self._batches[tp]
        return out

    def abort_all(self, error: BaseException, include_in_flight: bool = False) -> None:
        for batch in list(self):
            if include_in_flight or not batch.in_flight:
                batch.fail(error)
                self.complete(batch)

    def __iter__(self) -> Iterator[ProducerBatch]:
        for queue in list(self._batches.values()):
            yield from list(queue)

    def backlogged(self, topic: str, partition: int) -> bool:
        """Whether the partition has full batches waiting beyond those allowed in flight."""
        queue = self._batches.get((topic, partition))
        return queue is not None and len(queue) > self.in_flight_per_partition + 1

    def queue_sizes(self, topic: str) -> dict[int, int]:
        """Batches queued per partition of ``topic`` (the adaptive partitioner's load)."""
        return {p: len(q) for (t, p), q in self._batches.items() if t == topic}

    def __bool__(self) -> bool:
        return bool(self._batches)
