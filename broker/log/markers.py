"""Transaction markers in the log: reading a control batch's marker, writing one.

Control batches are rare (one per transaction and partition), so reading the one record of
each, off the hot path's header-only rule, costs nothing measurable.
"""

from __future__ import annotations

import os

from clients.records.batch import decode_batch
from clients.records.control import ABORT, COMMIT, decode_control_record, encode_end_txn_batch
from clients.records.errors import RecordsError
from clients.records.header import BatchHeader

# (committed, coordinator epoch) of a COMMIT or ABORT marker.
Marker = tuple[bool, int]


def marker_in(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> Marker | None:
    """The end-transaction marker of the control batch at ``pos``, or None (not a control
    batch, another control type, or an empty or unreadable one)."""
    if not header.is_control or header.records_count == 0:
        return None
    try:
        batch = decode_batch(buf, pos, verify_crc=False)
        record = decode_control_record(batch.records[0])
    except (RecordsError, IndexError):
        return None
    if not record.is_end_txn_marker:
        return None
    return record.type == COMMIT, int(record.coordinator_epoch or 0)


def marker_at(fd: int, position: int, header: BatchHeader) -> Marker | None:
    """:func:`marker_in` for a batch of a segment file."""
    if not header.is_control:
        return None
    return marker_in(os.pread(fd, header.size, position), 0, header)


def marker_batch(committed: bool, *, producer_id: int, producer_epoch: int,
                 coordinator_epoch: int, timestamp: int) -> bytearray:
    """A control batch holding one COMMIT or ABORT marker, offsets to be stamped."""
    return bytearray(encode_end_txn_batch(
        COMMIT if committed else ABORT, producer_id=producer_id, producer_epoch=producer_epoch,
        coordinator_epoch=coordinator_epoch, timestamp=timestamp))
