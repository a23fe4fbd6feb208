"""Checks a leader applies to a produced batch, from its 61-byte header alone."""

from __future__ import annotations

from broker.log import errors
from broker.log.config import LogConfig
from clients.records.header import BatchHeader


def validate_leader_batch(log_name: str, header: BatchHeader, config: LogConfig, now_ms: int) -> None:
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
    if not config.log_append_time:
        if header.max_timestamp >= 0 and header.max_timestamp - now_ms > config.message_timestamp_after_max_ms:
            raise errors.InvalidTimestamp(
                f"{log_name}: timestamp {header.max_timestamp} is more than "
                f"message.timestamp.after.max.ms ahead of {now_ms}"
            )
        if header.base_timestamp >= 0 and now_ms - header.base_timestamp > config.message_timestamp_before_max_ms:
            raise errors.InvalidTimestamp(
                f"{log_name}: timestamp {header.base_timestamp} is more than "
                f"message.timestamp.before.max.ms behind {now_ms}"
            )
