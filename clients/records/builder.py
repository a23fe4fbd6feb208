"""Incremental batch building for the producer's accumulator.

Records are encoded as they are appended, so the builder always knows the batch's
(uncompressed) size and ``build()`` only joins, compresses and checksums.
"""

from __future__ import annotations

from typing import Sequence

from clients.records.batch import CREATE_TIME, NO_TIMESTAMP, assemble_batch
from clients.records.header import (
    BATCH_HEADER_SIZE,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
)
from clients.records.record import Header, encode_record

DEFAULT_BATCH_SIZE = 16384  # the producer's batch.size default


class BatchBuilder:
    """Accumulates records into one batch of at most ``max_bytes`` (uncompressed estimate).

    The first record is always accepted, however large, as Kafka's producer does; after that
    ``try_append`` refuses a record that would push the batch past ``max_bytes``.
    """

    def __init__(
        self,
        *,
        max_bytes: int = DEFAULT_BATCH_SIZE,
        compression: int = 0,
        base_offset: int = 0,
        timestamp_type: int = CREATE_TIME,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        is_transactional: bool = False,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    ) -> None:
        self.max_bytes = max_bytes
        self.compression = compression
        self.base_offset = base_offset
        self.timestamp_type = timestamp_type
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.partition_leader_epoch = partition_leader_epoch
        self._parts: list[bytes] = []
        self._size = BATCH_HEADER_SIZE
        self._base_timestamp: int | None = None
        self._max_timestamp = NO_TIMESTAMP
        self._built: bytes | None = None

    @property
    def records_count(self) -> int:
        return len(self._parts)

    @property
    def is_empty(self) -> bool:
        return not self._parts

    @property
    def estimated_size(self) -> int:
        """Batch size so far, header included, before compression."""
        return self._size

    @property
    def max_timestamp(self) -> int:
        return self._max_timestamp

    @property
    def is_closed(self) -> bool:
        return self._built is not None

    def set_producer_state(
        self, producer_id: int, producer_epoch: int, base_sequence: int, is_transactional: bool
    ) -> None:
        """Set idempotence fields late, as the producer does when it drains the batch."""
        self._check_open()
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional

    def try_append(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] = (),
    ) -> int | None:
        """Append and return the record's offset delta, or None if the batch has no room
        or is already built."""
        # Runs once per produced record: the record is encoded straight into the batch's
        # parts and measured from its encoding, with no helper calls in between.
        if self._built is not None:
            return None
        parts = self._parts
        delta = len(parts)
        base = self._base_timestamp
        if base is None:
            base = self._base_timestamp = timestamp
        encoded = encode_record(delta, timestamp - base, key, value, headers)
        size = self._size + len(encoded)
        if delta and size > self.max_bytes:
            return None
        if timestamp > self._max_timestamp:
            self._max_timestamp = timestamp
        parts.append(encoded)
        self._size = size
        return delta

    def append(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] = (),
    ) -> int:
        """Append regardless of ``max_bytes``; return the record's offset delta."""
        self._check_open()
        return self._add(timestamp, self._encode(timestamp, key, value, headers))

    def has_room_for(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] = (),
    ) -> bool:
        if not self._parts:
            return True
        return self._size + len(self._encode(timestamp, key, value, headers)) <= self.max_bytes

    def build(self) -> bytes:
        """The finished batch; the builder is closed afterwards and returns the same bytes."""
        if self._built is not None:
            return self._built
        if not self._parts:
            raise ValueError("cannot build an empty batch")
        assert self._base_timestamp is not None
        self._built = assemble_batch(
            b"".join(self._parts),
            records_count=len(self._parts),
            base_offset=self.base_offset,
            last_offset_delta=len(self._parts) - 1,
            base_timestamp=self._base_timestamp,
            max_timestamp=self._max_timestamp,
            compression=self.compression,
            timestamp_type=self.timestamp_type,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=self.base_sequence,
            partition_leader_epoch=self.partition_leader_epoch,
            is_transactional=self.is_transactional,
        )
        return self._built

    def _encode(
        self, timestamp: int, key: bytes | None, value: bytes | None, headers: Sequence[Header]
    ) -> bytes:
        base = timestamp if self._base_timestamp is None else self._base_timestamp
        return encode_record(len(self._parts), timestamp - base, key, value, headers)

    def _add(self, timestamp: int, encoded: bytes) -> int:
        if self._base_timestamp is None:
            self._base_timestamp = timestamp
        if timestamp > self._max_timestamp:
            self._max_timestamp = timestamp
        self._parts.append(encoded)
        self._size += len(encoded)
        return len(self._parts) - 1

    def _check_open(self) -> None:
        if self._built is not None:
            raise ValueError("batch already built")
