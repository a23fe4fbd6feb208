"""Control records: the transaction markers (and other types) written in control batches.

Key of every control record: ``version int16, type int16``. Value of an ABORT/COMMIT marker
(Kafka's EndTransactionMarker): ``version int16, coordinator_epoch int32``. Other control
types (KRaft's leader-change and snapshot records) are recognised by type; their values are
left to their owners.
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass

from clients.records.batch import Record, encode_batch
from clients.records.errors import CorruptRecordError
from clients.records.header import NO_PARTITION_LEADER_EPOCH

logger = logging.getLogger(__name__)

ABORT = 0
COMMIT = 1
LEADER_CHANGE = 2
SNAPSHOT_HEADER = 3
SNAPSHOT_FOOTER = 4
KRAFT_VERSION = 5
KRAFT_VOTERS = 6
UNKNOWN = -1

CONTROL_TYPE_NAMES: dict[int, str] = {
    ABORT: "ABORT",
    COMMIT: "COMMIT",
    LEADER_CHANGE: "LEADER_CHANGE",
    SNAPSHOT_HEADER: "SNAPSHOT_HEADER",
    SNAPSHOT_FOOTER: "SNAPSHOT_FOOTER",
    KRAFT_VERSION: "KRAFT_VERSION",
    KRAFT_VOTERS: "KRAFT_VOTERS",
}

CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0

_KEY = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """A decoded control record. ``coordinator_epoch`` is set for ABORT and COMMIT only."""

    version: int
    type: int
    coordinator_epoch: int | None = None

    @property
    def is_end_txn_marker(self) -> bool:
        return self.type in (ABORT, COMMIT)

    @property
    def type_name(self) -> str:
        return CONTROL_TYPE_NAMES.get(self.type, "UNKNOWN")


def encode_control_key(control_type: int, version: int = CONTROL_KEY_VERSION) -> bytes:
    return _KEY.pack(version, control_type)


def encode_end_txn_marker(
    control_type: int, coordinator_epoch: int, *, timestamp: int, offset: int | None = None
) -> Record:
    """The control record of a COMMIT or ABORT marker."""
    if control_type not in (ABORT, COMMIT):
        raise ValueError(f"an end-transaction marker is ABORT or COMMIT, not {control_type}")
    value = _END_TXN_VALUE.pack(END_TXN_MARKER_VERSION, coordinator_epoch)
    return Record(offset, timestamp, encode_control_key(control_type), value)


def encode_end_txn_batch(
    control_type: int,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """A whole control batch holding one COMMIT or ABORT marker, as the coordinator writes it."""
    marker = encode_end_txn_marker(control_type, coordinator_epoch, timestamp=timestamp)
    return encode_batch(
        [marker],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        partition_leader_epoch=partition_leader_epoch,
        is_transactional=True,
        is_control=True,
    )


def decode_control_record(record: Record) -> ControlRecord:
    """Parse a record of a control batch; CorruptRecordError if its key or marker is malformed."""
    key = record.key
    if key is None or len(key) < _KEY.size:
        raise CorruptRecordError("control record key is missing or shorter than 4 bytes")
    version, control_type = _KEY.unpack_from(key)
    if version < 0:
        raise CorruptRecordError(f"invalid control record key version {version}")
    if version > CONTROL_KEY_VERSION:
        logger.debug("control record key version %d is newer than %d", version, CONTROL_KEY_VERSION)
    if control_type not in CONTROL_TYPE_NAMES:
        return ControlRecord(version, UNKNOWN)
    if control_type not in (ABORT, COMMIT):
        return ControlRecord(version, control_type)
    value = record.value
    if value is None or len(value) < _END_TXN_VALUE.size:
        raise CorruptRecordError("end-transaction marker value is missing or shorter than 6 bytes")
    marker_version, coordinator_epoch = _END_TXN_VALUE.unpack_from(value)
    if marker_version < 0:
        raise CorruptRecordError(f"invalid end-transaction marker version {marker_version}")
    return ControlRecord(version, control_type, coordinator_epoch)
