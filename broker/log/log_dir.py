"""One log directory: its lock, checkpoints and clean-shutdown marker."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Mapping

from broker.log.checkpoints import (
    CLEAN_SHUTDOWN_MARKER,
    CLEANER_CHECKPOINT,
    LOCK_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_CHECKPOINT,
    fsync_dir,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from broker.log.errors import LogDirLockedError

Offsets = dict[tuple[str, int], int]


class LogDir:
    """A locked log directory; constructing it takes the lock or raises LogDirLockedError."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).resolve()
        self.path.mkdir(parents=True, exist_ok=True)
        self._lock_fd = os.open(self.path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            raise LogDirLockedError(
                f"log directory {self.path} is locked by another process (its {LOCK_FILE} is held); "
                "is another broker using it?"
            ) from None
        marker = self.path / CLEAN_SHUTDOWN_MARKER
        self.had_clean_shutdown = marker.exists()
        self.recovery_points = read_offset_checkpoint(self.path / RECOVERY_POINT_CHECKPOINT)
        self.high_watermarks = read_offset_checkpoint(self.path / REPLICATION_CHECKPOINT)
        self.log_start_offsets = read_offset_checkpoint(self.path / LOG_START_OFFSET_CHECKPOINT)
        self.cleaner_offsets = read_offset_checkpoint(self.path / CLEANER_CHECKPOINT)
        if self.had_clean_shutdown:
            # From now on a crash must trigger recovery.
            marker.unlink()
            fsync_dir(self.path)

    def write_checkpoints(self, recovery: Mapping[tuple[str, int], int], hw: Mapping[tuple[str, int], int],
                          log_start: Mapping[tuple[str, int], int], cleaner: Mapping[tuple[str, int], int]) -> None:
        write_offset_checkpoint(self.path / RECOVERY_POINT_CHECKPOINT, recovery)
        write_offset_checkpoint(self.path / REPLICATION_CHECKPOINT, hw)
        write_offset_checkpoint(self.path / LOG_START_OFFSET_CHECKPOINT, log_start)
        write_offset_checkpoint(self.path / CLEANER_CHECKPOINT, cleaner)

    def mark_clean_shutdown(self) -> None:
        (self.path / CLEAN_SHUTDOWN_MARKER).touch()
        fsync_dir(self.path)

    def release(self) -> None:
        if self._lock_fd >= 0:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = -1
