"""Errors raised by the record-batch codec."""


class RecordsError(Exception):
    """Base class for every error the records codec raises."""


class CorruptRecordError(RecordsError):
    """A batch is truncated, has a bad magic or length, or fails its CRC (CORRUPT_MESSAGE)."""


class UnsupportedCompressionError(RecordsError):
    """The batch uses a codec that is unknown or whose package cannot be imported."""
