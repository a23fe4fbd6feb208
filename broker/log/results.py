"""What appends and reads return."""

from __future__ import annotations

import enum
import os
import weakref
from dataclasses import dataclass, field


class UpperBound(enum.Enum):
    """How far a read may go: a consumer reads to the HW (or LSO), a follower to the LEO."""

    HW = "high_watermark"
    LEO = "log_end_offset"
    LSO = "last_stable_offset"


@dataclass(frozen=True, slots=True)
class AppendResult:
    """Offsets and timestamps one append produced (or, for a duplicate, the original ones)."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int
    records_count: int = 0
    duplicate: bool = False


@dataclass(frozen=True)
class FileRange:
    """Bytes ``[position, position + size)`` of an open file: a segment's records, sent with
    `os.sendfile` on plaintext connections.

    The log's fd stays open for at least file.delete.delay.ms after its segment is deleted;
    a response holds a `pinned` range of its own.
    """

    fd: int
    position: int
    size: int

    def read(self) -> bytes:
        return os.pread(self.fd, self.size, self.position)

    @classmethod
    def pinned(cls, fd: int, position: int, size: int) -> "FileRange":
        """A range over a duplicate of `fd`, closed when the range is dropped.

        A response may wait in a connection's queue, or stall mid-send, while the log closes
        the segment (topic deletion, retention, an empty segment rolled away); sending from
        a descriptor of its own keeps it reading that segment's bytes, never whatever file
        later reuses the number."""
        own = os.dup(fd)
        try:
            pinned = cls(own, position, size)
            weakref.finalize(pinned, os.close, own)
        except BaseException:
            os.close(own)
            raise
        return pinned


@dataclass(frozen=True, slots=True)
class ReadResult:
    """Record batches from ``first_offset`` on as file ranges, plus the partition's marks.

    Like Kafka, the last batch may be cut short by ``max_bytes``; readers skip a partial tail.
    """

    first_offset: int
    high_watermark: int
    log_end_offset: int
    log_start_offset: int
    last_stable_offset: int
    ranges: tuple[FileRange, ...] = field(default=())
    # An offset above every batch in `ranges` (the bound of a search for the aborted
    # transactions they may hold); -1 when nothing was read.
    upper_offset: int = -1

    @property
    def size(self) -> int:
        return sum(r.size for r in self.ranges)

    def read_bytes(self) -> bytes:
        return b"".join(r.read() for r in self.ranges)
