"""Sparse segment indexes, preallocated like Kafka's.

``.index``: 8-byte entries (offset relative to the segment base int32, file position int32).
``.timeindex``: 12-byte entries (timestamp int64, relative offset int32). Entries are
strictly increasing; lookups are binary searches over a memory mapping. The active segment's
files are preallocated to ``segment.index.bytes`` and trimmed to their entries on roll/close;
its entries are kept in anonymous memory and written to the file on flush, roll and close.
Preallocation is sparse (the file's size grows, not its blocks), and dropped entries are cut
off rather than overwritten with zeros, so an index left preallocated by an unclean stop
takes about the disk space of its entries, also after recovery.

An index holds no file descriptor between operations (a mapping outlives the descriptor it
was made from): a partition costs the node one descriptor, its active segment's log, not
three, so a node with many partitions stays far from its open-files limit.
"""

from __future__ import annotations

import mmap
import os
import struct
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from broker.log.errors import KafkaStorageError


class CorruptIndexError(KafkaStorageError):
    """An index file's entries are not consistent with its segment."""


class _MmapIndex:
    _entry = struct.Struct(">ii")

    def __init__(self, path: Path, base_offset: int, max_index_size: int, *, writable: bool) -> None:
        self.path = path
        self.base_offset = base_offset
        self.entry_size = self._entry.size
        self._max_size = max(self.entry_size, max_index_size - max_index_size % self.entry_size)
        with self._opened(create=True) as fd:
            length = _data_length(fd)
        self._entries = length // self.entry_size
        self._mmap: mmap.mmap | None = None
        # Bytes [start, end) of the in-memory entries not yet written to the file.
        self._dirty: tuple[int, int] | None = None
        self._needs_fsync = False
        self.writable = False
        if writable:
            self.make_writable()
        else:
            self._map_file(self._entries * self.entry_size)

    @contextmanager
    def _opened(self, create: bool = False) -> Iterator[int]:
        """A descriptor of the index file for the length of the block."""
        fd = os.open(self.path, os.O_RDWR | (os.O_CREAT if create else 0), 0o644)
        try:
            yield fd
        finally:
            os.close(fd)

    def _map_file(self, size: int) -> None:
        """Read-only state: the file holds exactly ``size`` bytes of entries, mapped."""
        with self._opened() as fd:
            self._write_dirty(fd)
            if self._mmap is not None:
                self._mmap.close()
                self._mmap = None
            os.ftruncate(fd, size)
            if size > 0:
                self._mmap = mmap.mmap(fd, size)

    def make_writable(self) -> None:
        """Preallocate the file to its maximum size and take entries in memory.

        The active segment's entries live in an anonymous mapping and reach the file on
        flush, trim and close: stores into a file mapping stall whenever the kernel is writing
        that page back, which on a busy disk cost appends milliseconds. Nothing is lost by
        this: after an unclean stop the active segment's indexes are rebuilt from the log.
        """
        if self.writable:
            return
        self._max_size = max(self._max_size, self._entries * self.entry_size)
        used = self._entries * self.entry_size
        buffer = mmap.mmap(-1, self._max_size)
        with self._opened() as fd:
            if used:
                buffer[:used] = os.pread(fd, used, 0)
            if self._mmap is not None:
                self._mmap.close()
            os.ftruncate(fd, self._max_size)
        self._mmap = buffer
        self.writable = True

    def _mark_dirty(self, start: int, end: int) -> None:
        if self._dirty is None:
            self._dirty = (start, end)
        else:
            self._dirty = (min(self._dirty[0], start), max(self._dirty[1], end))

    def _write_dirty(self, fd: int) -> None:
        """Write in-memory entries (and zeroed, dropped ones) that the file lacks."""
        if self._dirty is None or self._mmap is None:
            return
        start, end = self._dirty
        view = memoryview(self._mmap)[start:end]
        try:
            written = 0
            while written < len(view):
                written += os.pwrite(fd, view[written:], start + written)
        finally:
            view.release()
        self._dirty = None
        self._needs_fsync = True

    @property
    def entries(self) -> int:
        return self._entries

    @property
    def max_entries(self) -> int:
        return self._max_size // self.entry_size

    def is_full(self) -> bool:
        return self._entries >= self.max_entries

    def _read(self, n: int) -> tuple[int, int]:
        assert self._mmap is not None
        return self._entry.unpack_from(self._mmap, n * self.entry_size)

    def _write(self, first: int, second: int) -> None:
        if not self.writable or self._entries >= self.max_entries:
            raise KafkaStorageError(f"index {self.path} is full or read-only")
        assert self._mmap is not None
        position = self._entries * self.entry_size
        self._entry.pack_into(self._mmap, position, first, second)
        self._entries += 1
        self._mark_dirty(position, position + self.entry_size)

    def _search(self, target: int, key_of: int) -> int:
        """Slot of the last entry whose field ``key_of`` is <= target, or -1."""
        lo, hi = 0, self._entries - 1
        found = -1
        while lo <= hi:
            mid = (lo + hi) // 2
            if self._read(mid)[key_of] <= target:
                found, lo = mid, mid + 1
            else:
                hi = mid - 1
        return found

    def _truncate_entries(self, count: int) -> None:
        old_end = self._entries * self.entry_size
        self._entries = max(0, min(count, self._entries))
        if self._mmap is not None and self.writable:
            # Zero the dropped entries so that stale entries are never read back: in memory,
            # and in the file by cutting it there and reserving its size again. That leaves
            # a hole, where writing zeros would allocate blocks for them: after an unclean
            # stop, a preallocated index counts all its reserved space as entries.
            start = self._entries * self.entry_size
            if old_end > start:
                self._mmap[start:old_end] = bytes(old_end - start)
                if self._dirty is not None:
                    low, high = self._dirty
                    self._dirty = (low, min(high, start)) if low < start else None
                with self._opened() as fd:
                    os.ftruncate(fd, start)
                    os.ftruncate(fd, self._max_size)
                self._needs_fsync = True

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        self._truncate_entries(0)

    def trim(self) -> None:
        """Write out the entries and shrink the file to them; the index becomes read-only."""
        self._map_file(self._entries * self.entry_size)
        self.writable = False

    def take_unflushed(self) -> list[int]:
        """For an fsync elsewhere: write out what is only in memory and hand over a duplicate
        of the descriptor when the file needs an fsync (the caller closes it)."""
        if self._dirty is None and not self._needs_fsync:
            return []
        fd = os.open(self.path, os.O_RDWR)
        try:
            self._write_dirty(fd)
        except BaseException:
            os.close(fd)
            raise
        self._needs_fsync = False
        return [fd]

    def flush(self) -> None:
        """Make the entries durable: write out what is only in memory, then fsync."""
        if self._dirty is None and not self._needs_fsync:
            return
        with self._opened() as fd:
            self._write_dirty(fd)
            os.fsync(fd)
        self._needs_fsync = False

    def close(self, trim: bool = True) -> None:
        if trim:
            self.trim()
        if self._mmap is not None:
            self._mmap.close()
            self._mmap = None

    def rename(self, new_path: Path) -> None:
        os.replace(self.path, new_path)
        self.path = new_path

    def delete(self) -> None:
        self.close(trim=False)
        self.path.unlink(missing_ok=True)


def _data_length(fd: int) -> int:
    """The file's size, up to its first hole: a preallocated index left by an unclean stop
    is sparse past its entries (its end reads as zeros), and those are not entries."""
    size = os.fstat(fd).st_size
    try:
        hole = os.lseek(fd, 0, os.SEEK_HOLE)
        os.lseek(fd, 0, os.SEEK_SET)
    except (OSError, AttributeError):  # no SEEK_HOLE here: every byte counts
        return size
    return min(size, hole)


class OffsetIndex(_MmapIndex):
    """Maps the last offset of an indexed batch to the file position where it starts."""

    _entry = struct.Struct(">ii")

    def append(self, offset: int, position: int) -> None:
        relative = offset - self.base_offset
        if self._entries and relative <= self._read(self._entries - 1)[0]:
            raise KafkaStorageError(f"offset {offset} not above the last entry of {self.path}")
        self._write(relative, position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the last entry at or below ``offset``; the segment start if none."""
        slot = self._search(offset - self.base_offset, 0)
        if slot < 0:
            return self.base_offset, 0
        relative, position = self._read(slot)
        return self.base_offset + relative, position

    def last_entry(self) -> tuple[int, int]:
        if not self._entries:
            return self.base_offset, 0
        relative, position = self._read(self._entries - 1)
        return self.base_offset + relative, position

    def offset_from_position(self, position: int) -> int | None:
        """The offset of the first entry whose batch starts at or after ``position``: every
        batch before ``position`` holds smaller offsets. None when no entry is that far."""
        slot = self._search(position - 1, 1) + 1
        if slot >= self._entries:
            return None
        return self.base_offset + self._read(slot)[0]

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= ``offset``."""
        self._truncate_entries(self._search(offset - self.base_offset - 1, 0) + 1)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        for n in range(self._entries):
            relative, position = self._read(n)
            yield self.base_offset + relative, position

    def sanity_check(self, log_size: int) -> None:
        last_offset, last_position = -1, -1
        for offset, position in self:
            if offset <= last_offset or position < last_position or position >= max(log_size, 1):
                raise CorruptIndexError(f"inconsistent entry ({offset}, {position}) in {self.path}")
            last_offset, last_position = offset, position


class TimeIndex(_MmapIndex):
    """Maps a timestamp to the offset of the record that first reached it in the segment."""

    _entry = struct.Struct(">qi")

    def is_full(self) -> bool:
        # One slot stays free for the final entry written when the segment becomes inactive.
        return self._entries >= self.max_entries - 1

    def last_entry(self) -> tuple[int, int]:
        """(timestamp, offset) of the last entry, (-1, base offset) if empty."""
        if not self._entries:
            return -1, self.base_offset
        timestamp, relative = self._read(self._entries - 1)
        return timestamp, self.base_offset + relative

    def maybe_append(self, timestamp: int, offset: int, *, skip_full_check: bool = False) -> None:
        """Append when ``timestamp`` is above the last entry's (Kafka's maybeAppend)."""
        if not skip_full_check and self.is_full():
            raise KafkaStorageError(f"time index {self.path} is full")
        last_ts, last_offset = self.last_entry()
        if self._entries and offset < last_offset:
            raise KafkaStorageError(f"offset {offset} below the last entry of {self.path}")
        if timestamp > last_ts or not self._entries:
            if timestamp < 0:
                return
            self._write(timestamp, offset - self.base_offset)

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the last entry at or below ``timestamp``; (-1, base) if none."""
        slot = self._search(timestamp, 0)
        if slot < 0:
            return -1, self.base_offset
        ts, relative = self._read(slot)
        return ts, self.base_offset + relative

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose offset is >= ``offset``."""
        keep = 0
        for n in range(self._entries):
            if self.base_offset + self._read(n)[1] >= offset:
                break
            keep = n + 1
        self._truncate_entries(keep)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        for n in range(self._entries):
            timestamp, relative = self._read(n)
            yield timestamp, self.base_offset + relative

    def sanity_check(self, next_offset: int) -> None:
        last_ts, last_offset = -1, -1
        for timestamp, offset in self:
            if timestamp <= last_ts or offset < last_offset or offset >= max(next_offset, self.base_offset + 1):
                raise CorruptIndexError(f"inconsistent entry ({timestamp}, {offset}) in {self.path}")
            last_ts, last_offset = timestamp, offset
