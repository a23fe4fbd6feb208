"""Whole RecordBatch v2 encode and decode, records included.

For producers, consumers, log compaction and dump-log. The broker's produce/fetch/replication
paths use ``clients.records.header`` instead and never decode records.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterator, Sequence

from clients.records import compression as _compression
from clients.records.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from clients.records.errors import CorruptRecordError
from clients.records.header import (
    ATTRIBUTES_OFFSET,
    BATCH_HEADER_SIZE,
    COMPRESSION_MASK,
    CONTROL_MASK,
    DELETE_HORIZON_MASK,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    crc32c,
    parse_header,
)
from clients.records.record import Record, RowSpec, decode_records, encode_record

__all__ = [
    "CREATE_TIME",
    "LOG_APPEND_TIME",
    "NO_TIMESTAMP",
    "Record",
    "RecordBatch",
    "assemble_batch",
    "decode_batch",
    "encode_batch",
    "iter_record_batches",
]

CREATE_TIME = 0
LOG_APPEND_TIME = 1
NO_TIMESTAMP = -1

# Everything after the CRC: attributes .. records_count.
_AFTER_CRC = struct.Struct(">hiqqqhii")
_BEFORE_CRC = struct.Struct(">qiib")  # base_offset, batch_length, partition_leader_epoch, magic
_CRC = struct.Struct(">I")


@dataclass(slots=True)
class RecordBatch:
    """A decoded batch: its header and its (decompressed) records.

    For control batches the records are the control records; see ``clients.records.control``.
    """

    header: BatchHeader
    records: list[Record]

    @property
    def delete_horizon_ms(self) -> int | None:
        """The compaction delete horizon, when the batch carries one (it is the base timestamp)."""
        if self.header.attributes & DELETE_HORIZON_MASK:
            return self.header.base_timestamp
        return None


def decode_batch(
    buf: bytes | bytearray | memoryview,
    pos: int = 0,
    *,
    verify_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    rows: RowSpec | None = None,
) -> RecordBatch:
    """Decode the batch starting at ``pos`` in ``buf``; with ``rows`` its records are built
    as ``decode_records`` says (else they are Records).

    Raises CorruptRecordError for malformed data (including a failed CRC when ``verify_crc``
    and records beyond ``max_decompressed_size`` once decompressed) and
    UnsupportedCompressionError for a codec that is unknown or not installed.
    """
    header = parse_header(buf, pos)
    end = pos + header.size
    if end > len(buf):
        raise CorruptRecordError(
            f"batch at position {pos} claims {header.size} bytes, only {len(buf) - pos} remain"
        )
    view = memoryview(buf)
    if verify_crc and crc32c(view[pos + ATTRIBUTES_OFFSET : end]) != header.crc:
        raise CorruptRecordError(f"CRC mismatch in batch at position {pos}")
    section = view[pos + BATCH_HEADER_SIZE : end]
    codec = header.attributes & COMPRESSION_MASK
    if codec:
        data = _compression.decompress(codec, section, max_decompressed_size)
    else:
        data = bytes(section)
    log_append_time = header.max_timestamp if header.attributes & TIMESTAMP_TYPE_MASK else None
    records = decode_records(
        data, header.records_count, header.base_offset, header.base_timestamp, log_append_time,
        rows=rows,
    )
    return RecordBatch(header, records)


def iter_record_batches(
    buf: bytes | bytearray | memoryview,
    *,
    verify_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> Iterator[RecordBatch]:
    """Decode each batch of ``buf`` in turn; a truncated last batch raises CorruptRecordError."""
    pos = 0
    end = len(buf)
    while pos < end:
        batch = decode_batch(
            buf, pos, verify_crc=verify_crc, max_decompressed_size=max_decompressed_size
        )
        yield batch
        pos += batch.header.size


def assemble_batch(
    records_section: bytes,
    *,
    records_count: int,
    base_offset: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    compression: int = 0,
    timestamp_type: int = CREATE_TIME,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    is_transactional: bool = False,
    is_control: bool = False,
    has_delete_horizon: bool = False,
    level: int | None = None,
) -> bytes:
    """Wrap already-encoded records (uncompressed) in a batch header: compress (at ``level``,
    see ``compression.compress``), then CRC."""
    if compression not in _compression.CODEC_NAMES:
        raise ValueError(f"unknown compression codec {compression}")
    if timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
        raise ValueError(f"unknown timestamp type {timestamp_type}")
    attributes = compression
    if timestamp_type == LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_MASK
    if is_control:
        attributes |= CONTROL_MASK
    if has_delete_horizon:
        attributes |= DELETE_HORIZON_MASK
    payload = (_compression.compress(compression, records_section, level) if compression
               else records_section)
    after_crc = (
        _AFTER_CRC.pack(
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            records_count,
        )
        + payload
    )
    batch_length = len(after_crc) + BATCH_HEADER_SIZE - LOG_OVERHEAD - _AFTER_CRC.size
    return (
        _BEFORE_CRC.pack(base_offset, batch_length, partition_leader_epoch, MAGIC_V2)
        + _CRC.pack(crc32c(after_crc))
        + after_crc
    )


def encode_batch(
    records: Sequence[Record],
    *,
    base_offset: int = 0,
    compression: int = 0,
    timestamp_type: int = CREATE_TIME,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    is_transactional: bool = False,
    is_control: bool = False,
    base_timestamp: int | None = None,
    last_offset_delta: int | None = None,
    delete_horizon_ms: int | None = None,
) -> bytes:
    """Encode ``records`` as one batch.

    Offsets given on records are kept (deltas from ``base_offset``, gaps allowed, strictly
    increasing); None or -1 means the next offset. ``base_timestamp`` defaults to the first
    record's timestamp, or to ``delete_horizon_ms`` when that is set (Kafka stores the delete
    horizon there). ``last_offset_delta`` may exceed the last record's delta, as the log
    cleaner needs to keep a batch's last offset; it is required for an empty batch.
    """
    if delete_horizon_ms is not None:
        if base_timestamp is not None and base_timestamp != delete_horizon_ms:
            raise ValueError("base_timestamp must equal delete_horizon_ms when both are given")
        base_timestamp = delete_horizon_ms
    if base_timestamp is None:
        base_timestamp = records[0].timestamp if records else NO_TIMESTAMP
    parts: list[bytes] = []
    previous = -1
    max_timestamp = NO_TIMESTAMP
    for record in records:
        offset = record.offset
        delta = previous + 1 if offset is None or offset == -1 else offset - base_offset
        if delta <= previous:
            raise ValueError(
                f"record offset {offset} is not after the previous offset {base_offset + previous}"
            )
        parts.append(
            encode_record(delta, record.timestamp - base_timestamp, record.key, record.value, record.headers)
        )
        if record.timestamp > max_timestamp:
            max_timestamp = record.timestamp
        previous = delta
    if last_offset_delta is None:
        if not records:
            raise ValueError("an empty batch needs last_offset_delta")
        last_offset_delta = previous
    elif last_offset_delta < previous or not 0 <= last_offset_delta < 2**31:
        raise ValueError(f"last_offset_delta {last_offset_delta} is before the last record ({previous})")
    if not records:
        max_timestamp = base_timestamp
    return assemble_batch(
        b"".join(parts),
        records_count=len(records),
        base_offset=base_offset,
        last_offset_delta=last_offset_delta,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        compression=compression,
        timestamp_type=timestamp_type,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        partition_leader_epoch=partition_leader_epoch,
        is_transactional=is_transactional,
        is_control=is_control,
        has_delete_horizon=delete_horizon_ms is not None,
    )
