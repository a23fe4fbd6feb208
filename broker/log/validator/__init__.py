"""Kafka's LogValidator for a leader's produce path, where a topic needs more than the batch
header: keys on compacted topics, CreateTime bounds the header cannot settle, and the topic's
compression.type.

A batch whose topic needs none of these is left alone (its header decides, see
``RecordPolicy.needs_records``), so a plain topic pays no per-record work. Records refused
here come back as one LogError whose ``record_errors`` lists each (batch index, message), as
ProduceResponse v8+ reports them (KIP-467); nothing of such a batch is appended.
"""

from __future__ import annotations

from broker.log import errors
from broker.log.validator.policy import RecordPolicy
from broker.log.validator.records import RecordError, check_records
from clients.records import compression
from clients.records.batch import LOG_APPEND_TIME, CREATE_TIME, assemble_batch
from clients.records.errors import CorruptRecordError, UnsupportedCompressionError
from clients.records.header import BATCH_HEADER_SIZE, BatchHeader, crc_is_valid

__all__ = ["RecordError", "RecordPolicy", "check_records", "validate_records"]

Batches = bytearray | memoryview

# Kafka shows the first three record errors in the partition's error message.
_SHOWN_ERRORS = 3


def validate_records(batches: Batches, headers: list[tuple[int, BatchHeader]],
                     policy: RecordPolicy, now_ms: int, log_name: str) -> Batches:
    """Check the records of each batch that ``policy`` needs read and rewrite each batch
    whose codec is not the topic's; returns ``batches`` itself when nothing was rewritten,
    else a new buffer (offsets deltas, timestamps and producer fields kept).

    Raises CorruptMessage for a bad CRC or undecodable compressed data, InvalidRecord for a
    malformed records section, UnsupportedCompressionType for a codec this process lacks, and
    InvalidRecord or InvalidTimestamp carrying ``record_errors`` for refused records.
    """
    rewritten: dict[int, bytes] = {}
    for pos, header in headers:
        convert = policy.converts(header)
        check = policy.needs_records(header, now_ms)
        if not (convert or check):
            continue
        batch = memoryview(batches)[pos: pos + header.size]
        # The batch is read (and maybe re-checksummed) here: its own CRC must hold first.
        if not crc_is_valid(batch, 0, header):
            raise errors.CorruptMessage(f"{log_name}: CRC mismatch in batch at position {pos}")
        section = _records_section(batch, header, log_name)
        if check:
            refused = check_records(section, header, policy, now_ms, log_name)
            if refused:
                raise _refusal(refused, header.records_count, log_name)
        if convert:
            rewritten[pos] = _recompress(section, header, policy, log_name)
    if not rewritten:
        return batches
    out = bytearray()
    for pos, header in headers:
        out += rewritten.get(pos) or memoryview(batches)[pos: pos + header.size]
    return out


def _refusal(refused: list[RecordError], records_count: int, log_name: str) -> errors.LogError:
    """The partition-level error for refused records: INVALID_TIMESTAMP when any timestamp
    was refused, else INVALID_RECORD, as Kafka answers; ``record_errors`` lists them all."""
    timestamps = any(r.error is errors.InvalidTimestamp for r in refused)
    shown = "; ".join(r.message for r in refused[:_SHOWN_ERRORS])
    more = f" (and {len(refused) - _SHOWN_ERRORS} more)" if len(refused) > _SHOWN_ERRORS else ""
    error = (errors.InvalidTimestamp if timestamps else errors.InvalidRecord)(
        f"{log_name}: {len(refused)} of {records_count} records refused: {shown}{more}")
    error.record_errors = tuple((r.batch_index, r.message) for r in refused)
    return error


def _records_section(batch: memoryview, header: BatchHeader, log_name: str) -> bytes | memoryview:
    """The batch's records, decompressed."""
    section = batch[BATCH_HEADER_SIZE:]
    if not header.compression:
        return section
    try:
        return compression.decompress(header.compression, section)
    except CorruptRecordError as exc:
        raise errors.CorruptMessage(f"{log_name}: {exc}") from None
    except UnsupportedCompressionError as exc:
        raise errors.UnsupportedCompressionType(f"{log_name}: {exc}") from None


def _recompress(section: bytes | memoryview, header: BatchHeader, policy: RecordPolicy,
                log_name: str) -> bytes:
    """The batch with its records in the topic's codec, every other field as it was."""
    assert policy.target_codec is not None
    try:
        return assemble_batch(
            bytes(section),
            records_count=header.records_count,
            base_offset=header.base_offset,
            last_offset_delta=header.last_offset_delta,
            base_timestamp=header.base_timestamp,
            max_timestamp=header.max_timestamp,
            compression=policy.target_codec,
            level=policy.level,
            timestamp_type=LOG_APPEND_TIME if header.is_log_append_time else CREATE_TIME,
            producer_id=header.producer_id,
            producer_epoch=header.producer_epoch,
            base_sequence=header.base_sequence,
            partition_leader_epoch=header.partition_leader_epoch,
            is_transactional=header.is_transactional,
        )
    except UnsupportedCompressionError as exc:
        raise errors.UnsupportedCompressionType(f"{log_name}: {exc}") from None
