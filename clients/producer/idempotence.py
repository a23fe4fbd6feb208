"""The idempotent producer's state (pure): producer id and epoch, the next sequence per
partition, the last acknowledged sequence, and when the epoch must be bumped.

Sequences are stamped into a batch when it is drained (so they follow the order batches
leave the accumulator), and stamped again if the producer id or epoch changed since. As in
Kafka's producer since KIP-360, an idempotent producer recovers from OUT_OF_ORDER_SEQUENCE_NUMBER
and UNKNOWN_PRODUCER_ID by bumping its epoch locally (every partition starts again at
sequence 0), and asks for a new producer id only when the epoch would overflow.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from clients.records.header import ATTRIBUTES_OFFSET, CRC_OFFSET, TRANSACTIONAL_MASK, crc32c

TopicPartition = tuple[str, int]

MAX_SEQUENCE = 2**31 - 1
MAX_EPOCH = 2**15 - 1
# The last epoch a producer may bump to locally; Kafka keeps Short.MAX_VALUE out of use.
_LAST_LOCAL_EPOCH = MAX_EPOCH - 1

_PRODUCER_FIELDS = struct.Struct(">qhi")   # producer id, epoch, base sequence
_PRODUCER_OFFSET = 43
_ATTRIBUTES = struct.Struct(">h")
_CRC = struct.Struct(">I")


def stamp_producer_state(batch: bytes, producer_id: int, epoch: int, base_sequence: int,
                         transactional: bool) -> bytes:
    """``batch`` (one built RecordBatch v2) with its producer id, epoch, base sequence and
    transactional bit replaced and its CRC recomputed; the records are not touched."""
    out = bytearray(batch)
    _PRODUCER_FIELDS.pack_into(out, _PRODUCER_OFFSET, producer_id, epoch, base_sequence)
    (attributes,) = _ATTRIBUTES.unpack_from(out, ATTRIBUTES_OFFSET)
    attributes = (attributes | TRANSACTIONAL_MASK) if transactional \
        else (attributes & ~TRANSACTIONAL_MASK)
    _ATTRIBUTES.pack_into(out, ATTRIBUTES_OFFSET, attributes)
    _CRC.pack_into(out, CRC_OFFSET, crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)


def add_sequence(sequence: int, count: int) -> int:
    """``sequence + count`` wrapping after int32 max, as Kafka's sequences do."""
    return (sequence + count) % (MAX_SEQUENCE + 1)


@dataclass(frozen=True, slots=True)
class ProducerIdAndEpoch:
    producer_id: int = -1
    epoch: int = -1

    @property
    def valid(self) -> bool:
        return self.producer_id >= 0


class IdempotenceState:
    """What the producer knows about its id and each partition's sequences."""

    def __init__(self, transactional: bool = False) -> None:
        self.transactional = transactional
        self.identity = ProducerIdAndEpoch()
        self._next_sequence: dict[TopicPartition, int] = {}
        self._last_acked: dict[TopicPartition, int] = {}
        self.epoch_bump_needed = False

    @property
    def has_id(self) -> bool:
        return self.identity.valid

    def set_identity(self, producer_id: int, epoch: int) -> None:
        """A new id or epoch (from InitProducerId or a local bump): sequences restart at 0."""
        self.identity = ProducerIdAndEpoch(producer_id, epoch)
        self._next_sequence.clear()
        self._last_acked.clear()
        self.epoch_bump_needed = False

    def forget_identity(self) -> None:
        """Ask for a new producer id before the next batch."""
        self.identity = ProducerIdAndEpoch()
        self._next_sequence.clear()
        self._last_acked.clear()
        self.epoch_bump_needed = False

    def bump_epoch_locally(self) -> bool:
        """The idempotent producer's bump: epoch + 1 with the same id; False when the epoch
        is exhausted (the caller then asks for a new id)."""
        current = self.identity
        if not current.valid or current.epoch >= _LAST_LOCAL_EPOCH:
            self.forget_identity()
            return False
        self.set_identity(current.producer_id, current.epoch + 1)
        return True

    def stamp(self, tp: TopicPartition, batch: bytes, records: int,
              stamped: tuple[int, int, int] | None) -> tuple[bytes, tuple[int, int, int]]:
        """Give a drained batch its sequence: ``stamped`` is (producer id, epoch, base
        sequence) from an earlier attempt, kept when the identity has not changed since
        (``batch`` is then returned as given). Returns the bytes to send and what was
        stamped."""
        identity = self.identity
        if stamped is not None and stamped[:2] == (identity.producer_id, identity.epoch):
            return batch, stamped
        base = self._next_sequence.get(tp, 0)
        self._next_sequence[tp] = add_sequence(base, records)
        state = (identity.producer_id, identity.epoch, base)
        return stamp_producer_state(batch, *state, self.transactional), state

    def is_current(self, stamped: tuple[int, int, int] | None) -> bool:
        return stamped is not None and stamped[:2] == (self.identity.producer_id,
                                                        self.identity.epoch)

    def acknowledged(self, tp: TopicPartition, stamped: tuple[int, int, int],
                     records: int) -> None:
        if self.is_current(stamped):
            self._last_acked[tp] = add_sequence(stamped[2], records - 1)

    def is_next_sequence(self, tp: TopicPartition, stamped: tuple[int, int, int]) -> bool:
        """Whether the batch is the first one the partition has not acknowledged: an
        OUT_OF_ORDER_SEQUENCE_NUMBER for it means the broker lost the producer's state, not
        that an earlier batch is missing."""
        if not self.is_current(stamped):
            return False
        return stamped[2] == add_sequence(self._last_acked.get(tp, -1), 1)
