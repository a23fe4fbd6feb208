"""Record-level timestamp lookup for ListOffsets by time (not a hot path: records are parsed)."""

from __future__ import annotations

import logging
import os

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
