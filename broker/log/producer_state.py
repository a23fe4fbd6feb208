"""Idempotent-producer state per producer id, snapshotted to ``<offset>.snapshot``.

For each producer the log keeps its epoch and the metadata of its last five batches, which is
enough to answer a retried batch with its original offsets (Kafka keeps five because a
producer has at most five requests in flight). Snapshots are msgpack with a CRC32C, never
pickle; recovery loads the newest snapshot at or below the log end and replays batch headers
from there.
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
from broker.log.errors import InvalidProducerEpoch, OutOfOrderSequence
from broker.log.segment import SNAPSHOT_SUFFIX, file_name
from clients.records.header import NO_SEQUENCE, BatchHeader, crc32c

logger = logging.getLogger(__name__)

NUM_BATCHES_TO_RETAIN = 5
_SNAPSHOT_VERSION = 1
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """Sequence and offset range of one batch a producer appended (for duplicate detection)."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    """One producer id's epoch and its last few batches, as Kafka's ProducerStateEntry."""

    producer_id: int
    epoch: int
    last_timestamp: int = -1
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def copy(self) -> ProducerEntry:
        return ProducerEntry(self.producer_id, self.epoch, self.last_timestamp,
                             deque(self.batches, maxlen=NUM_BATCHES_TO_RETAIN))

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


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT32_MAX)


class ProducerStateManager:
    """Producer entries of one partition plus the snapshot files in its directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.producers: dict[int, ProducerEntry] = {}
        # Offset up to which (exclusive) batches have been applied.
        self.map_end_offset = 0

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
            entry.add(header)
            pending[pid] = entry

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

    def update(self, header: BatchHeader) -> None:
        """Apply one appended batch (leader, follower or recovery)."""
        if header.producer_id >= 0:
            entry = self.producers.get(header.producer_id)
            if entry is None:
                entry = self.producers[header.producer_id] = ProducerEntry(header.producer_id, header.producer_epoch)
            entry.add(header)
        self.map_end_offset = header.next_offset

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle longer than ``expiration_ms``; returns how many."""
        expired = [pid for pid, e in self.producers.items() if now_ms - e.last_timestamp >= expiration_ms]
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
             [[b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp] for b in e.batches]]
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
        if version != _SNAPSHOT_VERSION or crc32c(payload) != crc:
            raise ValueError("bad version or CRC")
        producers: dict[int, ProducerEntry] = {}
        for pid, epoch, last_ts, batches in msgpack.unpackb(payload):
            entry = ProducerEntry(pid, epoch, last_ts)
            entry.batches.extend(BatchMetadata(*b) for b in batches)
            producers[pid] = entry
        return producers

    def load(self, log_start_offset: int, log_end_offset: int) -> None:
        """Load the newest valid snapshot at or below ``log_end_offset``; drop later ones.

        Afterwards ``map_end_offset`` says where header replay must start.
        """
        self.truncate_snapshots_after(log_end_offset)
        self.producers = {}
        self.map_end_offset = log_start_offset
        for offset in reversed(self.snapshot_offsets()):
            path = self._snapshot_path(offset)
            try:
                self.producers = self._read_snapshot(path)
            except (ValueError, TypeError, msgpack.UnpackException) as exc:
                logger.warning("deleting corrupt producer snapshot %s: %s", path, exc)
                path.unlink(missing_ok=True)
                continue
            self.map_end_offset = max(offset, log_start_offset)
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
