"""The leader epoch cache: (epoch, start offset) pairs in ``leader-epoch-checkpoint``.

Semantics follow Kafka's LeaderEpochFileCache, which OffsetsForLeaderEpoch and follower
truncation depend on.
"""

from __future__ import annotations

import bisect
import logging
from pathlib import Path

from broker.log.checkpoints import (
    LEADER_EPOCH_CHECKPOINT,
    read_epoch_checkpoint,
    write_epoch_checkpoint,
)

logger = logging.getLogger(__name__)

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochCache:
    """Epochs in increasing order, each with the first offset written in it."""

    def __init__(self, directory: Path) -> None:
        self._path = directory / LEADER_EPOCH_CHECKPOINT
        self._entries: list[tuple[int, int]] = read_epoch_checkpoint(self._path)

    @property
    def entries(self) -> list[tuple[int, int]]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int:
        return self._entries[-1][0] if self._entries else UNDEFINED_EPOCH

    def _persist(self) -> None:
        write_epoch_checkpoint(self._path, self._entries)

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; returns whether anything changed.

        Entries with an epoch >= ``epoch`` or a start offset >= ``start_offset`` are replaced.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid epoch entry ({epoch}, {start_offset})")
        if self._entries:
            last_epoch, last_start = self._entries[-1]
            if epoch == last_epoch and start_offset >= last_start:
                return False
        removed = []
        while self._entries and (self._entries[-1][0] >= epoch or self._entries[-1][1] >= start_offset):
            removed.append(self._entries.pop())
        if removed:
            logger.info("%s: epoch %d at %d replaces %s", self._path.parent.name, epoch, start_offset, removed)
        self._entries.append((epoch, start_offset))
        self._persist()
        return True

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) as OffsetsForLeaderEpoch answers for ``requested_epoch``.

        The end offset is the start of the first higher epoch (the LEO for the latest epoch);
        the epoch returned is the largest known epoch <= the requested one.
        """
        if requested_epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self.latest_epoch:
            return requested_epoch, log_end_offset
        epochs = [e for e, _ in self._entries]
        higher = bisect.bisect_right(epochs, requested_epoch)
        if higher == len(epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        higher_start = self._entries[higher][1]
        if higher == 0:
            return requested_epoch, higher_start
        return self._entries[higher - 1][0], higher_start

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch in which ``offset`` was written, UNDEFINED_EPOCH if unknown."""
        starts = [s for _, s in self._entries]
        slot = bisect.bisect_right(starts, offset) - 1
        return self._entries[slot][0] if slot >= 0 else UNDEFINED_EPOCH

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries starting at or after ``end_offset`` (log truncated to it)."""
        if self._entries and self._entries[-1][1] >= end_offset:
            self._entries = [(e, s) for e, s in self._entries if s < end_offset]
            self._persist()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop entries wholly below ``start_offset``; the last one moves up to it."""
        below = [(e, s) for e, s in self._entries if s <= start_offset]
        if not below or (len(below) == 1 and below[0][1] == start_offset):
            return
        kept = [(below[-1][0], start_offset)] + [(e, s) for e, s in self._entries if s > start_offset]
        self._entries = kept
        self._persist()

    def clear(self) -> None:
        self._entries = []
        self._persist()
