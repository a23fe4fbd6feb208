"""One log segment: ``<base>.log`` of wire-format batches plus its two indexes.

Only batch headers are ever parsed here. Appends are one os.write of the caller's bytes, into
blocks reserved ahead of them (block_reservation).
"""

from __future__ import annotations

import logging
import mmap
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from broker.log.block_reservation import BlockReservation
from broker.log.errors import KafkaStorageError
from broker.log.index import OffsetIndex, TimeIndex
from broker.log.results import FileRange
from broker.log.txn_index import TXN_INDEX_SUFFIX, TransactionIndex
from clients.records.errors import CorruptRecordError
from clients.records.header import (
    BATCH_HEADER_SIZE,
    BatchHeader,
    crc_is_valid,
    parse_header,
)

logger = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
SNAPSHOT_SUFFIX = ".snapshot"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
# How many of the latest batches a segment remembers the positions of.
_RECENT_BATCHES = 64


def file_name(base_offset: int, suffix: str) -> str:
    """Kafka's segment file name: the base offset in 20 digits."""
    return f"{base_offset:020d}{suffix}"


@dataclass(frozen=True, slots=True)
class SegmentSettings:
    """The topic configs a segment needs."""

    index_interval_bytes: int = 4096
    max_index_size: int = 10 * 1024 * 1024
    preallocate: bool = False
    segment_bytes: int = 1024 * 1024 * 1024


class LogSegment:
    """A segment's files and in-memory marks (size, next offset, max timestamp)."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        settings: SegmentSettings,
        *,
        suffix: str = "",
        active: bool = True,
        created_ms: int = -1,
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.settings = settings
        self.suffix = suffix
        self.log_path = directory / (file_name(base_offset, LOG_SUFFIX) + suffix)
        existed = self.log_path.exists()
        self.fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            self.size = os.fstat(self.fd).st_size
            self._blocks = BlockReservation(self.fd)
            self.index_rebuild_needed = False
            index_path = directory / (file_name(base_offset, INDEX_SUFFIX) + suffix)
            time_path = directory / (file_name(base_offset, TIME_INDEX_SUFFIX) + suffix)
            if existed and (not index_path.exists() or not time_path.exists()):
                self.index_rebuild_needed = True
            self.offset_index = OffsetIndex(index_path, base_offset, settings.max_index_size,
                                            writable=active)
            self.time_index = TimeIndex(time_path, base_offset, settings.max_index_size,
                                        writable=active)
        except BaseException:
            # Out of descriptors, say: a segment that failed to open keeps none of them.
            os.close(self.fd)
            raise
        self.txn_index = TransactionIndex(directory / (file_name(base_offset, TXN_INDEX_SUFFIX) + suffix))
        # Set by recover(): the aborted transactions must be found again by replaying the
        # segment's markers, which needs the producer state (the log does it).
        self.txn_index_rebuild_needed = False
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        self.first_batch_timestamp: int | None = None
        self.created_ms = created_ms
        self._bytes_since_index_entry = 0
        self.unflushed = False
        # Offset -> position of the first batch whose last offset reaches it, for the offsets
        # just past the latest batches: followers and tailing consumers fetch from there,
        # and on a log of small batches the sparse index would have them scan many headers.
        self._batch_at: dict[int, int] = {}

    # -- loading -------------------------------------------------------------------------

    def iter_headers(self, start_position: int = 0) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each batch from ``start_position``; stops at a short tail."""
        position = start_position
        while position + BATCH_HEADER_SIZE <= self.size:
            raw = os.pread(self.fd, BATCH_HEADER_SIZE, position)
            header = parse_header(raw)
            if position + header.size > self.size:
                return
            yield position, header
            position += header.size

    def load_marks(self) -> None:
        """Derive next offset and max timestamp from the trusted indexes and the tail."""
        _, position = self.offset_index.last_entry()
        ts, ts_offset = self.time_index.last_entry()
        self.max_timestamp, self.offset_of_max_timestamp = ts, ts_offset
        self.next_offset = self.base_offset
        for _, header in self.iter_headers(position):
            self.next_offset = header.next_offset
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = header.max_timestamp, header.last_offset
        self.first_batch_timestamp = None

    def batch_ends_at(self, position: int, last_offset: int) -> bool:
        """Whether a whole batch starts at ``position`` and ends at ``last_offset``: what an
        offset index entry (last offset, position) claims."""
        try:
            header = parse_header(os.pread(self.fd, BATCH_HEADER_SIZE, position))
        except CorruptRecordError:
            return False
        return header.last_offset == last_offset and position + header.size <= self.size

    def rebuild_indexes(self) -> None:
        """Rebuild both indexes from the batch headers, keeping the log as it is.

        For an index found wrong after loading: the batches themselves were checked when
        written or recovered, so unlike :meth:`recover` nothing is truncated.
        """
        was_writable = self.offset_index.writable
        self._reset_indexes()
        end = 0
        try:
            for position, header in self.iter_headers(0):
                self._index_batch(position, header)
                end = position + header.size
        except CorruptRecordError as exc:
            raise KafkaStorageError(f"{self.log_path}: cannot rebuild indexes: {exc}") from None
        if end != self.size:
            raise KafkaStorageError(f"{self.log_path}: cannot rebuild indexes: torn batch at {end}")
        if not was_writable:
            self.become_inactive()

    def _reset_indexes(self) -> None:
        """Empty, writable indexes and the marks they imply, ready to re-index every batch."""
        self.offset_index.make_writable()
        self.time_index.make_writable()
        self.offset_index.reset()
        self.time_index.reset()
        self.next_offset = self.base_offset
        self.max_timestamp, self.offset_of_max_timestamp = -1, self.base_offset
        self._bytes_since_index_entry = 0
        self._batch_at.clear()

    def recover(self) -> int:
        """Validate every batch, rebuild both indexes, truncate an invalid tail.

        Returns the number of bytes truncated.
        """
        self._reset_indexes()
        valid = 0
        if self.size:
            with mmap.mmap(self.fd, self.size, prot=mmap.PROT_READ) as data:
                valid = self._scan_valid(data)
        truncated = self.size - valid
        if truncated:
            logger.warning("truncating %d invalid bytes at position %d of %s", truncated, valid, self.log_path)
        # Even at the same size: truncation also frees blocks reserved past the end before a crash.
        os.ftruncate(self.fd, valid)
        self._blocks.forget()
        self.size = valid
        self.index_rebuild_needed = False
        self.txn_index.reset()
        self.txn_index_rebuild_needed = True
        return truncated

    def _scan_valid(self, data: mmap.mmap) -> int:
        position = 0
        last_offset = self.base_offset - 1
        while position < self.size:
            try:
                header = parse_header(data, position)
            except CorruptRecordError as exc:
                logger.warning("%s: %s", self.log_path, exc)
                break
            if position + header.size > self.size:
                logger.warning("%s: torn batch at position %d", self.log_path, position)
                break
            if header.base_offset <= last_offset or not crc_is_valid(data, position, header):
                logger.warning("%s: corrupt batch at position %d", self.log_path, position)
                break
            self._index_batch(position, header)
            last_offset = header.last_offset
            position += header.size
        return position

    # -- appending -----------------------------------------------------------------------

    def _index_batch(self, position: int, header: BatchHeader) -> None:
        self._index_entry(position, header.last_offset, header.max_timestamp, header.size)

    def _index_entry(self, position: int, last_offset: int, max_timestamp: int, size: int) -> None:
        if max_timestamp > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = max_timestamp, last_offset
        # A full index takes no more entries (it is sparse: lookups just scan further), so a
        # multi-batch append, or a rebuild after index.interval.bytes shrank, cannot fail on it.
        if self._bytes_since_index_entry > self.settings.index_interval_bytes and not self.indexes_full():
            self.offset_index.append(last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_index_entry = 0
        self._bytes_since_index_entry += size
        recent = self._batch_at
        recent[self.next_offset] = position
        if len(recent) > _RECENT_BATCHES:
            del recent[next(iter(recent))]
        self.next_offset = last_offset + 1
        if self.first_batch_timestamp is None:
            self.first_batch_timestamp = max_timestamp

    def _write_all(self, data: bytes | bytearray | memoryview) -> None:
        """One os.write of the caller's buffer (more only if the kernel writes it short)."""
        start = self.size
        settings = self.settings
        self._blocks.ahead_of(start, len(data), settings.segment_bytes, whole=settings.preallocate)
        try:
            written = os.write(self.fd, data)
            if written < len(data):
                view = memoryview(data)
                while written < len(view):
                    written += os.write(self.fd, view[written:])
        except OSError:
            # Never leave a partial batch behind a failed write: cut the file back.
            try:
                os.ftruncate(self.fd, start)
                self._blocks.forget()
            except OSError:
                logger.exception("%s: cannot cut back a failed write", self.log_path)
            raise
        self.size = start + written
        self.unflushed = True

    def append(self, data: bytes | bytearray | memoryview, headers: list[tuple[int, BatchHeader]]) -> None:
        """Write ``data`` (whole batches with offsets assigned) and index it."""
        start = self.size
        self._write_all(data)
        for pos, header in headers:
            self._index_entry(start + pos, header.last_offset, header.max_timestamp, header.size)

    def append_indexed(self, data: bytes | bytearray | memoryview,
                       entries: list[tuple[int, int, int, int]]) -> None:
        """Like :meth:`append`, with each batch given as (position in ``data``, last offset,
        max timestamp, size): the leader's path, which knows these without re-reading headers."""
        start = self.size
        self._write_all(data)
        for pos, last_offset, max_timestamp, size in entries:
            self._index_entry(start + pos, last_offset, max_timestamp, size)

    def is_full_for(self, size: int) -> bool:
        return self.size > 0 and self.size + size > self.settings.segment_bytes

    def indexes_full(self) -> bool:
        return self.offset_index.is_full() or self.time_index.is_full()

    def rolling_base_ms(self) -> int:
        """Kafka's segment.ms clock: the first batch's timestamp, else the creation time."""
        if self.first_batch_timestamp is None and self.size:
            first = next(self.iter_headers(0), None)
            self.first_batch_timestamp = first[1].max_timestamp if first else None
        if self.first_batch_timestamp is not None and self.first_batch_timestamp >= 0:
            return self.first_batch_timestamp
        return self.created_ms

    # -- reading -------------------------------------------------------------------------

    def headers_from(self, offset: int) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each batch from the offset index's entry for ``offset`` on.

        An index entry is a hint, checked against the log before it is followed: the batch
        at its position must end at its offset. A loaded index is only spot-checked (reading
        every entry's batch would read every page of every segment at startup), so an entry
        may be wrong even though the index looked ordered; then both indexes are rebuilt from
        the log and the scan starts from the rebuilt entry. Position 0 needs no check.
        """
        indexed, position = self.offset_index.lookup(offset)
        if position == 0:
            yield from self.iter_headers(0)
            return
        headers = self.iter_headers(position)
        try:
            first = next(headers, None)
        except CorruptRecordError:
            first = None
        if first is None or first[1].last_offset != indexed:
            logger.warning("%s: index entry (%d, %d) does not match the log; rebuilding the indexes",
                           self.log_path, indexed, position)
            self.rebuild_indexes()
            yield from self.iter_headers(self.offset_index.lookup(offset)[1])
            return
        yield first
        yield from headers

    def translate_offset(self, offset: int) -> tuple[int, BatchHeader] | None:
        """The first batch whose last offset is >= ``offset``, or None."""
        position = self._batch_at.get(offset)
        if position is not None:
            return position, parse_header(os.pread(self.fd, BATCH_HEADER_SIZE, position))
        for pos, header in self.headers_from(offset):
            if header.last_offset >= offset:
                return pos, header
        return None

    def read(self, offset: int, max_bytes: int, max_position: int, min_one_batch: bool) -> FileRange | None:
        """File range starting at the batch holding ``offset``, ending by ``max_position``."""
        found = self.translate_offset(offset)
        if found is None:
            return None
        position, header = found
        if position >= max_position:
            return FileRange(self.fd, position, 0)
        limit = max(max_bytes, header.size) if min_one_batch else max_bytes
        return FileRange(self.fd, position, min(max_position - position, limit))

    def find_offset_by_timestamp(self, timestamp: int, start_offset: int) -> tuple[int, BatchHeader] | None:
        """(position, header) of the first batch from ``start_offset`` whose max ts >= timestamp."""
        _, offset = self.time_index.lookup(timestamp)
        for pos, header in self.headers_from(max(offset, start_offset)):
            if header.last_offset >= start_offset and header.max_timestamp >= timestamp:
                return pos, header
        return None

    def largest_timestamp(self) -> int:
        """Largest record timestamp, or the file's mtime if no batch carries one."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return int(os.fstat(self.fd).st_mtime * 1000)

    # -- lifecycle -----------------------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Drop every batch whose last offset is >= ``offset``; returns bytes removed."""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        position, header = found
        self.offset_index.truncate_to(header.base_offset)
        self.time_index.truncate_to(header.base_offset)
        self.txn_index.truncate_to(header.base_offset)
        removed = self.size - position
        os.ftruncate(self.fd, position)
        self._blocks.forget()
        self.size = position
        self.unflushed = True  # the next flush makes the truncation (and the indexes') durable
        self.offset_index.make_writable()
        self.time_index.make_writable()
        self.max_timestamp, self.offset_of_max_timestamp = -1, self.base_offset
        self._bytes_since_index_entry = 0
        self._batch_at.clear()
        self.load_marks()
        if self.size == 0:
            self.first_batch_timestamp = None
        return removed

    def take_unflushed(self) -> list[int]:
        """Descriptors (duplicates, the caller closes them) whose fsync makes this segment
        and its indexes durable, for a flush off the event loop; marks them flushed."""
        fds: list[int] = []
        try:
            if self.unflushed:
                fds.append(os.dup(self.fd))
                self.unflushed = False
            fds += self.offset_index.take_unflushed()
            fds += self.time_index.take_unflushed()
            fds += self.txn_index.take_unflushed()
        except OSError:
            for fd in fds:
                os.close(fd)
            raise
        return fds

    def flush(self) -> None:
        if self.unflushed:
            os.fsync(self.fd)
            self.unflushed = False
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def become_inactive(self) -> None:
        """On roll: record the final max timestamp, trim the indexes, free reserved blocks."""
        self._blocks.release_beyond(self.size)
        if self.time_index.writable:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp, skip_full_check=True)
        self.offset_index.trim()
        self.time_index.trim()

    def close(self) -> None:
        self.become_inactive()
        self.offset_index.close()
        self.time_index.close()
        os.close(self.fd)

    def change_suffix(self, old: str, new: str) -> None:
        """Rename all four files from suffix ``old`` to ``new`` (e.g. ".swap" to "")."""

        def renamed(path: Path) -> Path:
            stem = path.name[: len(path.name) - len(old)] if old else path.name
            return path.with_name(stem + new)

        target = renamed(self.log_path)
        os.replace(self.log_path, target)
        self.log_path = target
        self.offset_index.rename(renamed(self.offset_index.path))
        self.time_index.rename(renamed(self.time_index.path))
        self.txn_index.rename(renamed(self.txn_index.path))
        self.suffix = new

    def close_and_delete(self) -> None:
        """Close the fds and unlink the files (after the delete delay)."""
        self.offset_index.delete()
        self.time_index.delete()
        self.txn_index.delete()
        os.close(self.fd)
        self.log_path.unlink(missing_ok=True)
