"""Which whole segments retention removes: by retention.ms, retention.bytes and the log start.

Only non-active segments lying wholly below the high watermark are ever chosen; the log
itself renames and later unlinks them (`PartitionLog.delete_segments`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable

from broker.log.config import PRODUCER_ID_EXPIRATION_MS
from broker.log.segment import LogSegment

if TYPE_CHECKING:
    from broker.log.partition_log import PartitionLog

logger = logging.getLogger(__name__)

# (segment, base offset of the next segment) -> whether the segment may go.
SegmentPredicate = Callable[[LogSegment, int], bool]


def deletable_prefix(log: PartitionLog, predicate: SegmentPredicate) -> list[LogSegment]:
    """The oldest non-active segments below the HW for which `predicate` holds, up to the first
    that fails (retention never leaves a hole in the log)."""
    chosen = []
    segments = log.segments
    for n, segment in enumerate(segments[:-1]):
        upper = segments[n + 1].base_offset
        if upper > log.high_watermark or not predicate(segment, upper):
            break
        chosen.append(segment)
    return chosen


def delete_old_segments(log: PartitionLog, now_ms: int) -> int:
    """Apply retention.ms, retention.bytes and the log start offset; returns segments deleted."""
    config = log.config
    deleted = 0
    if config.delete and config.retention_ms >= 0:
        deleted += log.delete_segments(deletable_prefix(
            log, lambda s, _: now_ms - s.largest_timestamp() > config.retention_ms), now_ms, "retention.ms")
    if config.delete and config.retention_bytes >= 0:
        # Measured after the time-based pass, so its deletions count towards the limit.
        excess = log.size_in_bytes - config.retention_bytes

        def over_size(segment: LogSegment, _: int) -> bool:
            nonlocal excess
            if excess - segment.size >= 0:
                excess -= segment.size
                return True
            return False

        deleted += log.delete_segments(deletable_prefix(log, over_size), now_ms, "retention.bytes")
    deleted += log.delete_segments(
        deletable_prefix(log, lambda _, upper: upper <= log.log_start_offset), now_ms, "log start offset")
    if log.producer_state.remove_expired(now_ms, PRODUCER_ID_EXPIRATION_MS):
        logger.debug("%s: expired idle producer ids", log.name)
    return deleted
