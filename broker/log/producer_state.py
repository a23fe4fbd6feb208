"""Idempotent-producer state per producer id, snapshotted to ``<offset>.snapshot``.

For each producer the log keeps its epoch and the metadata of its last five batches, which is
enough to answer a retried batch with its original offsets (Kafka keeps five because a
producer has at most five requests in flight). Snapshots are msgpack with a CRC32C, never
pickle; recovery loads the newest snapshot at or below the log end and replays batch headers
from there.

Transactions: a producer's first transactional batch after a marker opens its transaction
(its offset is the transaction's first offset); a COMMIT or ABORT marker ends it. The first
unstable offset is the first offset of the earliest transaction still open, or of one whose
marker the high watermark has not yet passed (a new leader could still lose that marker).
"""

from __future__ import annotations

import logging
import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import msgpack

from broker.log.checkpoints import fsync_dir
from broker.log.errors import (
    InvalidProducerEpoch,
    InvalidTxnState,
    OutOfOrderSequence,
    TransactionCoordinatorFenced,
)
from broker.log.segment import SNAPSHOT_SUFFIX, file_name
from clients.records.header import NO_SEQUENCE, BatchHeader, crc32c

logger = logging.getLogger(__name__)

NUM_BATCHES_TO_RETAIN = 5
_SNAPSHOT_VERSION = 2  # 2 adds the coordinator epoch and the open transaction's first offset
_READABLE_SNAPSHOT_VERSIONS = (1, 2)
NO_OFFSET = -1
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """Sequence and offset range of one batch a producer appended (for duplicate detection)."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction a marker ended: its first offset and the marker's offset."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


@dataclass(slots=True)
class ProducerEntry:
    """One producer id's epoch and its last few batches, as Kafka's ProducerStateEntry."""

    producer_id: int
    epoch: int
    last_timestamp: int = -1
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    coordinator_epoch: int = -1
    current_txn_first_offset: int = NO_OFFSET

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def copy(self) -> ProducerEntry:
        return ProducerEntry(self.producer_id, self.epoch, self.last_timestamp,
                             deque(self.batches, maxlen=NUM_BATCHES_TO_RETAIN),
                             self.coordinator_epoch, self.current_txn_first_offset)

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        if header.producer_epoch != self.epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == header.base_sequence and batch.last_seq == header.last_sequence:
                return batch
        return None

    def add(self, header: BatchHeader) -> None:
        """Apply a batch with assigned offsets."""
        if header.producer_epoch != self.epoch:
            self.epoch = header.producer_epoch
            self.batches.clear()
        self.batches.append(BatchMetadata(header.base_sequence, header.last_sequence,
                                          header.base_offset, header.last_offset, header.max_timestamp))
        self.last_timestamp = max(self.last_timestamp, header.max_timestamp)

    def end_txn(self, header: BatchHeader, coordinator_epoch: int) -> None:
        """Apply a marker: the transaction (if any) is over; a newer epoch resets batches."""
        if header.producer_epoch != self.epoch:
            self.epoch = header.producer_epoch
            self.batches.clear()
        self.coordinator_epoch = coordinator_epoch
        self.current_txn_first_offset = NO_OFFSET
        self.last_timestamp = max(self.last_timestamp, header.max_timestamp)


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT32_MAX)


class ProducerStateManager:
    """Producer entries of one partition plus the snapshot files in its directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.producers: dict[int, ProducerEntry] = {}
        # Offset up to which (exclusive) batches have been applied.
        self.map_end_offset = 0
        # Open transactions, producer id -> first offset, in order of first offset (a
        # transaction opens at the end of the log, so insertion order is offset order).
        self.ongoing: dict[int, int] = {}
        # Ended transactions whose marker the high watermark may not have passed yet.
        self.unreplicated: list[CompletedTxn] = []

    # -- validation and updates ----------------------------------------------------------

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        entry = self.producers.get(header.producer_id)
        return entry.find_duplicate(header) if entry else None

    def validate(self, headers: Iterable[BatchHeader]) -> None:
        """Check epochs and sequences of a leader append without changing any state."""
        pending: dict[int, ProducerEntry] = {}
        for header in headers:
            pid = header.producer_id
            if pid < 0:
                continue
            entry = pending.get(pid) or self.producers.get(pid)
            if entry is not None:
                self._check(entry, header)
                entry = entry.copy()
            else:
                entry = ProducerEntry(pid, header.producer_epoch)
            if not header.is_transactional and entry.current_txn_first_offset != NO_OFFSET:
                raise InvalidTxnState(
                    f"producer {pid} wrote a non-transactional batch inside its open transaction")
            entry.add(header)
            if header.is_transactional and entry.current_txn_first_offset == NO_OFFSET:
                entry.current_txn_first_offset = header.base_offset
            pending[pid] = entry

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        """Kafka's checks of a COMMIT/ABORT marker before it is appended."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.epoch:
            raise InvalidProducerEpoch(
                f"marker for producer {producer_id} at epoch {producer_epoch}, older than {entry.epoch}")
        if coordinator_epoch < entry.coordinator_epoch:
            raise TransactionCoordinatorFenced(
                f"marker for producer {producer_id} from coordinator epoch {coordinator_epoch}, "
                f"older than {entry.coordinator_epoch}")

    def has_ongoing_txn(self, producer_id: int) -> bool:
        return producer_id in self.ongoing

    @staticmethod
    def _check(entry: ProducerEntry, header: BatchHeader) -> None:
        if header.producer_epoch < entry.epoch:
            raise InvalidProducerEpoch(
                f"producer {entry.producer_id} epoch {header.producer_epoch} is older than {entry.epoch}"
            )
        if header.producer_epoch > entry.epoch:
            if header.base_sequence != 0:
                raise OutOfOrderSequence(
                    f"producer {entry.producer_id}: new epoch {header.producer_epoch} must start at "
                    f"sequence 0, got {header.base_sequence}"
                )
        elif not _in_sequence(entry.last_seq, header.base_sequence):
            raise OutOfOrderSequence(
                f"producer {entry.producer_id}: sequence {header.base_sequence} does not follow "
                f"{entry.last_seq}"
            )

    def update(self, header: BatchHeader, marker: tuple[bool, int] | None = None) -> CompletedTxn | None:
        """Apply one appended batch (leader, follower or recovery); ``marker`` is (committed,
        coordinator epoch) for a COMMIT or ABORT control batch. Returns the transaction a
        marker ended."""
        self.map_end_offset = header.next_offset
        pid = header.producer_id
        if pid < 0:
            return None
        entry = self.producers.get(pid)
        if entry is None:
            entry = self.producers[pid] = ProducerEntry(pid, header.producer_epoch)
        if header.is_control:
            if marker is None:
                return None
            committed, coordinator_epoch = marker
            first = entry.current_txn_first_offset
            completed = CompletedTxn(pid, first if first != NO_OFFSET else header.base_offset,
                                     header.last_offset, not committed)
            entry.end_txn(header, coordinator_epoch)
            self.ongoing.pop(pid, None)
            self.unreplicated.append(completed)
            return completed
        entry.add(header)
        if header.is_transactional and entry.current_txn_first_offset == NO_OFFSET:
            entry.current_txn_first_offset = header.base_offset
            self.ongoing[pid] = header.base_offset
        return None

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """The first offset a read_committed reader must not pass, or None when nothing is
        unstable below ``high_watermark`` (ended transactions under it are forgotten)."""
        if self.unreplicated:
            self.unreplicated = [t for t in self.unreplicated if t.last_offset >= high_watermark]
        elif not self.ongoing:
            return None
        first = next(iter(self.ongoing.values()), None)
        for txn in self.unreplicated:
            if first is None or txn.first_offset < first:
                first = txn.first_offset
        return first

    def stable_offset_after(self, completed: CompletedTxn) -> int:
        """The LSO just after ``completed`` ended, as the aborted-transaction index records
        it: the first offset of the earliest other open transaction, else past the marker."""
        for pid, first in self.ongoing.items():
            if pid != completed.producer_id:
                return first
        return completed.last_offset + 1

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle longer than ``expiration_ms``; returns how many."""
        # A producer inside a transaction never expires (its marker is still to come).
        expired = [pid for pid, e in self.producers.items()
                   if now_ms - e.last_timestamp >= expiration_ms and pid not in self.ongoing]
        for pid in expired:
            del self.producers[pid]
        return len(expired)

    # -- snapshots -----------------------------------------------------------------------

    def _snapshot_path(self, offset: int) -> Path:
        return self.directory / file_name(offset, SNAPSHOT_SUFFIX)

    def snapshot_offsets(self) -> list[int]:
        offsets = []
        for path in self.directory.glob("*" + SNAPSHOT_SUFFIX):
            try:
                offsets.append(int(path.name[: -len(SNAPSHOT_SUFFIX)]))
            except ValueError:
                continue
        return sorted(offsets)

    def take_snapshot(self) -> Path:
        """Write the state as of ``map_end_offset``."""
        producers = [
            [e.producer_id, e.epoch, e.last_timestamp,
             [[b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp] for b in e.batches],
             e.coordinator_epoch, e.current_txn_first_offset]
            for e in self.producers.values()
        ]
        payload = msgpack.packb(producers)
        path = self._snapshot_path(self.map_end_offset)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as out:
            out.write(msgpack.packb([_SNAPSHOT_VERSION, crc32c(payload), payload]))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
        fsync_dir(self.directory)
        return path

    def _read_snapshot(self, path: Path) -> dict[int, ProducerEntry]:
        version, crc, payload = msgpack.unpackb(path.read_bytes())
        if version not in _READABLE_SNAPSHOT_VERSIONS or crc32c(payload) != crc:
            raise ValueError("bad version or CRC")
        producers: dict[int, ProducerEntry] = {}
        for pid, epoch, last_ts, batches, *txn in msgpack.unpackb(payload):
            entry = ProducerEntry(pid, epoch, last_ts)
            entry.batches.extend(BatchMetadata(*b) for b in batches)
            if txn:
                entry.coordinator_epoch, entry.current_txn_first_offset = txn
            producers[pid] = entry
        return producers

    def load(self, log_start_offset: int, log_end_offset: int, upper: int | None = None) -> None:
        """Load the newest valid snapshot at or below ``log_end_offset`` (and ``upper``, when
        replay must start no later); drop those above the log end.

        Afterwards ``map_end_offset`` says where header replay must start.
        """
        self.truncate_snapshots_after(log_end_offset)
        self.producers = {}
        self.ongoing = {}
        self.unreplicated = []
        self.map_end_offset = log_start_offset
        limit = log_end_offset if upper is None else min(upper, log_end_offset)
        for offset in reversed(self.snapshot_offsets()):
            if offset > limit:
                continue
            path = self._snapshot_path(offset)
            try:
                self.producers = self._read_snapshot(path)
            except (ValueError, TypeError, msgpack.UnpackException, KeyError) as exc:
                logger.warning("deleting corrupt producer snapshot %s: %s", path, exc)
                path.unlink(missing_ok=True)
                continue
            self.map_end_offset = max(offset, log_start_offset)
            open_txns = sorted((e.current_txn_first_offset, pid) for pid, e in self.producers.items()
                               if e.current_txn_first_offset != NO_OFFSET)
            self.ongoing = {pid: first for first, pid in open_txns}
            return

    def truncate_snapshots_after(self, offset: int) -> None:
        """Delete snapshots above ``offset`` (after a log truncation)."""
        for snap in self.snapshot_offsets():
            if snap > offset:
                self._snapshot_path(snap).unlink(missing_ok=True)

    def delete_snapshots_before(self, offset: int) -> None:
        """Delete snapshots below ``offset`` except the newest one."""
        offsets = self.snapshot_offsets()
        for snap in offsets[:-1]:
            if snap < offset:
                self._snapshot_path(snap).unlink(missing_ok=True)

    def truncate_to(self, offset: int) -> None:
        """Forget batches at or above ``offset``; the caller replays from ``map_end_offset``."""
        self.truncate_snapshots_after(offset)
