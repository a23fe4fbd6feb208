"""The aborted-transaction index: ``<base>.txnindex`` next to each segment, as Kafka's.

One 34-byte entry per transaction aborted by a marker in the segment (all big-endian):
``version int16 (0), producer_id int64, first_offset int64, last_offset int64,
last_stable_offset int64``; ``last_offset`` is the ABORT marker's offset and
``last_stable_offset`` the LSO right after the abort. Entries are few (one per aborted
transaction), so a segment keeps them in memory too; the file exists once it has one.
"""

from __future__ import annotations

import bisect
import logging
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from broker.log.errors import KafkaStorageError

logger = logging.getLogger(__name__)

TXN_INDEX_SUFFIX = ".txnindex"
ENTRY_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One aborted transaction: its producer, data offsets up to its marker, and the LSO
    after the abort (which tells a search whether later segments can hold more)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(ENTRY_VERSION, self.producer_id, self.first_offset, self.last_offset,
                           self.last_stable_offset)


def decode_entries(data: bytes) -> list[AbortedTxn]:
    """Entries of a `.txnindex` file; a torn last entry is ignored, a bad version refused."""
    entries = []
    for pos in range(0, len(data) - len(data) % ENTRY_SIZE, ENTRY_SIZE):
        version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
        if version != ENTRY_VERSION:
            raise KafkaStorageError(f"transaction index entry version {version} at {pos}")
        entries.append(AbortedTxn(pid, first, last, lso))
    return entries


class TransactionIndex:
    """A segment's aborted transactions, ordered by marker offset."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: list[AbortedTxn] = []
        self._unflushed = False
        if path.exists():
            data = path.read_bytes()
            self.entries = decode_entries(data)
            if len(data) % ENTRY_SIZE:
                logger.warning("%s: dropping a torn entry at the end", path)
                self._rewrite()

    def append(self, txn: AbortedTxn) -> None:
        if self.entries and txn.last_offset <= self.entries[-1].last_offset:
            raise KafkaStorageError(
                f"{self.path}: aborted transaction at {txn.last_offset} does not follow "
                f"{self.entries[-1].last_offset}")
        self.entries.append(txn)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, txn.encode())
        finally:
            os.close(fd)
        self._unflushed = True

    def _rewrite(self) -> None:
        if not self.entries:
            self.path.unlink(missing_ok=True)
            return
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_bytes(b"".join(t.encode() for t in self.entries))
        os.replace(tmp, self.path)
        self._unflushed = True

    def reset(self) -> None:
        """Forget every entry (the segment's are about to be rebuilt from its batches)."""
        self.entries = []
        self.path.unlink(missing_ok=True)

    def truncate_to(self, offset: int) -> None:
        """Drop the transactions whose marker is at or after ``offset``."""
        kept = [t for t in self.entries if t.last_offset < offset]
        if len(kept) != len(self.entries):
            self.entries = kept
            self._rewrite()

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """Aborted transactions overlapping ``[fetch_offset, upper_bound)``, and whether the
        search is complete (an entry's LSO reached the bound: later segments add nothing)."""
        found = []
        entries = self.entries
        # Entries are ordered by marker offset: those ending before the fetch offset are
        # skipped by bisection (their LSOs are below any bound a fetch from there can have).
        start = bisect.bisect_left(entries, fetch_offset, key=lambda t: t.last_offset)
        for txn in entries[start:]:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return found, True
        return found, False

    def take_unflushed(self) -> list[int]:
        """A descriptor to fsync elsewhere, if the file has unsynced entries."""
        needed = self._unflushed and self.path.exists()
        self._unflushed = False
        return [os.open(self.path, os.O_RDONLY)] if needed else []

    def flush(self) -> None:
        if self._unflushed and self.path.exists():
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self._unflushed = False

    def rename(self, target: Path) -> None:
        if self.path.exists():
            os.replace(self.path, target)
        self.path = target

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)


def collect_aborted(indexes: Iterable[TransactionIndex], fetch_offset: int,
                    upper_bound: int) -> list[AbortedTxn]:
    """Kafka's search across segments: from the one holding ``fetch_offset`` on, until an
    entry's LSO shows no later segment can add to ``[fetch_offset, upper_bound)``."""
    found: list[AbortedTxn] = []
    for index in indexes:
        txns, complete = index.collect(fetch_offset, upper_bound)
        found.extend(txns)
        if complete:
            break
    return found
