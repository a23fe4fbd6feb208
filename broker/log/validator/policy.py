"""What a topic's configs ask of the records in a produced batch, what a batch header alone
settles (pure: no I/O, no record bytes)."""

from __future__ import annotations

from dataclasses import dataclass

from broker.config.compression_type import target_codec
from broker.log.config import LogConfig
from clients.records.compression import GZIP, LZ4, ZSTD
from clients.records.header import BatchHeader

LONG_MAX = 2**63 - 1
NO_TIMESTAMP = -1


@dataclass(frozen=True, slots=True)
class RecordPolicy:
    """The per-record rules of one topic (Kafka's LogValidator inputs).

    ``target_codec`` is None when batches keep the producer's codec; ``level`` is the
    compression.<codec>.level for it. Timestamp bounds apply to CreateTime topics only;
    ``before_max_ms`` at LONG_MAX means no lower bound.
    """

    compact: bool = False
    target_codec: int | None = None
    level: int | None = None
    create_time: bool = True
    before_max_ms: int = LONG_MAX
    after_max_ms: int = 3_600_000

    @classmethod
    def from_config(cls, config: LogConfig) -> RecordPolicy:
        codec = target_codec(config.compression_type)
        levels = {GZIP: config.compression_gzip_level, LZ4: config.compression_lz4_level,
                  ZSTD: config.compression_zstd_level}
        return cls(
            compact=config.compact,
            target_codec=codec,
            level=levels.get(codec) if codec is not None else None,
            create_time=not config.log_append_time,
            before_max_ms=config.message_timestamp_before_max_ms,
            after_max_ms=config.message_timestamp_after_max_ms,
        )

    def converts(self, header: BatchHeader) -> bool:
        """Whether the batch must be rewritten in the topic's codec."""
        return self.target_codec is not None and header.compression != self.target_codec

    def needs_records(self, header: BatchHeader, now_ms: int) -> bool:
        """Whether the records must be read to validate the batch.

        Keys on a compacted topic can only be seen in the records. Timestamps are settled
        by the header when its max timestamp is within message.timestamp.after.max.ms and
        either there is no before bound or the batch has one record (whose timestamp the max
        then is); a header timestamp out of bounds still needs the records, for the indexes
        of the records at fault.
        """
        if self.compact or header.is_log_append_time:
            return True
        if not self.create_time:
            return False
        max_timestamp = header.max_timestamp
        if max_timestamp - now_ms > self.after_max_ms:
            return True
        if self.before_max_ms == LONG_MAX:
            return False
        return header.records_count != 1 or (
            max_timestamp != NO_TIMESTAMP and now_ms - max_timestamp > self.before_max_ms)
