"""Checks a leader applies to a produced batch, from its 61-byte header alone (the checks
that need records, timestamps included, are broker.log.validator's)."""

from __future__ import annotations

from broker.log import errors
from broker.log.config import LogConfig
from clients.records.header import BatchHeader


def validate_leader_batch(log_name: str, header: BatchHeader, config: LogConfig) -> None:
    """Raise the Kafka storage error a leader answers for a batch it must refuse."""
    if header.size > config.max_message_bytes:
        raise errors.MessageTooLarge(
            f"{log_name}: batch of {header.size} bytes exceeds max.message.bytes {config.max_message_bytes}"
        )
    if header.last_offset_delta + 1 != header.records_count:
        raise errors.InvalidRecord(f"{log_name}: inconsistent batch offset range and record count")
    if header.is_control:
        raise errors.InvalidRecord(f"{log_name}: clients may not write control batches")
    if header.producer_id >= 0 and header.base_sequence < 0:
        raise errors.InvalidRecord(f"{log_name}: idempotent batch without a sequence number")
