"""Disk blocks reserved ahead of a segment's appends, without changing its size.

A write that extends a file on a delayed-allocation file system (ext4, xfs) pays for block
reservation page by page; a write into blocks already allocated does not, and on ext4 runs
about a quarter faster (scripts/bench-log prints both). So the active segment reserves blocks
ahead of its end with ``fallocate(FALLOC_FL_KEEP_SIZE)``: the file's size, and so everything a
reader or recovery sees, is unchanged, and truncating the file to its size (on roll, close or
recovery) hands unused blocks back. Where the call is missing or refused (another OS, a file
system without it, a full disk) appends simply go on without a reservation.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
from typing import Callable

logger = logging.getLogger(__name__)

_KEEP_SIZE = 0x01  # FALLOC_FL_KEEP_SIZE
LARGEST_CHUNK = 16 * 1024 * 1024


def _load_fallocate() -> Callable[[int, int, int, int], int] | None:
    try:
        function = ctypes.CDLL(None, use_errno=True).fallocate
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    function.restype = ctypes.c_int
    return function


_fallocate = _load_fallocate()


def reserve(fd: int, offset: int, length: int) -> bool:
    """Allocate ``length`` bytes of blocks from ``offset`` without changing the file's size."""
    if _fallocate is None or length <= 0:
        return False
    if _fallocate(fd, _KEEP_SIZE, offset, length) == 0:
        return True
    code = ctypes.get_errno()
    if code not in (errno.EOPNOTSUPP, errno.ENOSPC, errno.ENOSYS, errno.EINVAL):
        logger.debug("fallocate on fd %d failed: %s", fd, os.strerror(code))
    return False


class BlockReservation:
    """Keeps blocks reserved ahead of one file's end.

    Each reservation holds as much again as the file already does (at least the write at
    hand, at most LARGEST_CHUNK), so the unused space never exceeds the data: a rarely written
    segment reserves little, which matters on tmpfs, where reserved blocks are memory. None
    reaches past ``limit`` (the segment's size cap) unless one write does. With ``whole``
    (Kafka's ``preallocate``) the first covers the file up to ``limit``.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._end = 0
        self._enabled = True

    @property
    def end(self) -> int:
        """Where the reserved blocks end (0 when none are)."""
        return self._end

    def ahead_of(self, size: int, length: int, limit: int, *, whole: bool = False) -> None:
        """Make sure blocks are reserved for ``length`` bytes written at ``size``."""
        if size + length <= self._end or not self._enabled:
            return
        room = limit - size
        wanted = max(length, room if whole else min(size, LARGEST_CHUNK, room))
        if reserve(self._fd, size, wanted):
            self._end = size + wanted
            return
        # Refused once, refused again: stop asking. A refusal for lack of space may still
        # have allocated part of the range; give that back at once.
        self._enabled = False
        self._truncate(size)
        self.forget()

    def release_beyond(self, size: int) -> None:
        """Hand back the blocks past ``size``, the file's size (truncating to it frees them)."""
        if self._end > size:
            self._truncate(size)
        self.forget()

    def _truncate(self, size: int) -> None:
        # The reserved space is only a speed-up: failing to free it must not fail a roll.
        try:
            os.ftruncate(self._fd, size)
        except OSError as exc:
            logger.warning("cannot free blocks reserved past %d on fd %d: %s", size, self._fd, exc)

    def forget(self) -> None:
        """The file was truncated, which freed whatever was reserved past its new end."""
        self._end = 0
