"""Offset lookups by timestamp for ListOffsets (not a hot path: the batch found is parsed)."""

from __future__ import annotations

import logging
import os
from typing import Sequence

from broker.log.segment import LogSegment
from clients.records.batch import decode_batch
from clients.records.errors import RecordsError
from clients.records.header import BatchHeader

logger = logging.getLogger(__name__)


def first_record_at_or_after(
    segment: LogSegment, position: int, header: BatchHeader, timestamp: int, min_offset: int
) -> tuple[int, int]:
    """(timestamp, offset) of the first record in the batch at ``position`` with a timestamp
    >= ``timestamp`` and an offset >= ``min_offset``; the batch's own marks if it cannot be
    decoded."""
    data = os.pread(segment.fd, header.size, position)
    try:
        batch = decode_batch(data, verify_crc=False)
    except RecordsError as exc:
        logger.warning("%s: cannot decode batch at %d for a timestamp lookup: %s", segment.log_path, position, exc)
        return header.max_timestamp, max(header.base_offset, min_offset)
    for record in batch.records:
        if record.timestamp >= timestamp and record.offset is not None and record.offset >= min_offset:
            return record.timestamp, record.offset
    return header.max_timestamp, max(header.last_offset, min_offset)


def offset_for_timestamp(segments: Sequence[LogSegment], log_start_offset: int, log_end_offset: int,
                         timestamp: int) -> tuple[int, int] | None:
    """(timestamp, offset) of the first record with timestamp >= ``timestamp``, or None.

    Kafka's special values: -2 earliest, -1 latest (the LEO), -3 max timestamp.
    """
    if timestamp == -2:
        return -1, log_start_offset
    if timestamp == -1:
        return -1, log_end_offset
    if timestamp == -3:
        best = max(((s.max_timestamp, s.offset_of_max_timestamp) for s in segments), default=(-1, -1))
        if best[0] < 0:
            return -1, -1
        return best
    for segment in segments:
        if segment.next_offset <= log_start_offset or segment.max_timestamp < timestamp:
            continue
        found = segment.find_offset_by_timestamp(timestamp, log_start_offset)
        if found is not None:
            return first_record_at_or_after(segment, found[0], found[1], timestamp, log_start_offset)
    return None
