"""Errors the log raises, each carrying the Kafka error code a request handler returns."""

from __future__ import annotations


class LogError(Exception):
    """Base of every log error; ``error_code`` is Kafka's wire error code."""

    error_code: int = -1  # UNKNOWN_SERVER_ERROR
    # (batch index, message) of each record the validator refused, for ProduceResponse v8+
    # record_errors (KIP-467); empty when the batch as a whole was refused.
    record_errors: tuple[tuple[int, str], ...] = ()


class OffsetOutOfRange(LogError):
    """The requested offset is below the log start offset or above the log end offset."""

    error_code = 1


class CorruptMessage(LogError):
    """A batch is truncated, has a bad magic or length, or fails its CRC."""

    error_code = 2


class MessageTooLarge(LogError):
    """A batch is larger than the topic's max.message.bytes."""

    error_code = 10


class RecordListTooLarge(LogError):
    """A produce payload is larger than segment.bytes."""

    error_code = 18


class InvalidTimestamp(LogError):
    """A CreateTime timestamp is outside message.timestamp.before/after.max.ms."""

    error_code = 32


class OutOfOrderSequence(LogError):
    """An idempotent producer's sequence number skips ahead or restarts wrongly."""

    error_code = 45


class DuplicateSequence(LogError):
    """A retried batch was already appended; carries the offsets it got the first time."""

    error_code = 46

    def __init__(self, message: str, first_offset: int = -1, last_offset: int = -1) -> None:
        super().__init__(message)
        self.first_offset = first_offset
        self.last_offset = last_offset


class InvalidProducerEpoch(LogError):
    """A producer wrote with an epoch older than the one the log has seen."""

    error_code = 47


class InvalidTxnState(LogError):
    """A producer's write does not fit its transaction's state (KIP-890 verification too)."""

    error_code = 48


class TransactionCoordinatorFenced(LogError):
    """A marker came from a coordinator epoch older than one the partition has seen."""

    error_code = 52


class InvalidRecord(LogError):
    """A batch breaks a rule of the format (offset range, control batch from a client, ...)."""

    error_code = 87


class UnsupportedCompressionType(LogError):
    """The topic's compression.type names a codec this broker cannot write."""

    error_code = 76


class KafkaStorageError(LogError):
    """The log directory failed or is unusable."""

    error_code = 56


class LogDirLockedError(KafkaStorageError):
    """Another process holds the log directory's lock file."""


class UnexpectedAppendOffset(LogError):
    """A follower append does not start after the log end offset (never sent on the wire)."""

    error_code = -1
