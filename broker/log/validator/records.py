"""Per-record checks of one batch's records section, as Kafka's LogValidator makes them.

Only the leading fields of each record are read (length, timestamp delta, offset delta and,
on compacted topics, the key length); the rest of a record is skipped by its length. The
records section is the batch's uncompressed records, so a compressed batch is decompressed
first by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.log import errors
from broker.log.validator.policy import NO_TIMESTAMP, RecordPolicy
from clients.records.header import BatchHeader

_NULL_KEY = 1  # zig-zag varint of -1
_LENGTH, _TIMESTAMP_DELTA, _OFFSET_DELTA = range(3)
_LEADING_FIELDS = (_LENGTH, _TIMESTAMP_DELTA, _OFFSET_DELTA)


@dataclass(frozen=True, slots=True)
class RecordError:
    """One refused record: its index in the batch and the error class that names the code."""

    batch_index: int
    error: type[errors.LogError]
    message: str


def _uvarint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """An unsigned varint (up to ten bytes) at ``pos``: (value, next position)."""
    byte = data[pos]
    if byte < 0x80:
        return byte, pos + 1
    value = byte & 0x7F
    shift = 7
    for end in range(pos + 1, pos + 10):
        byte = data[end]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, end + 1
        shift += 7
    raise errors.InvalidRecord(f"varint longer than ten bytes at position {pos}")


def _key_length(data: bytes | memoryview, pos: int) -> int:
    """The raw (zig-zag) key length varint at ``pos``."""
    first = data[pos]
    return first if first < 0x80 else _uvarint(data, pos)[0]


def _signed(raw: int) -> int:
    return (raw >> 1) ^ -(raw & 1)


def check_records(data: bytes | memoryview, header: BatchHeader, policy: RecordPolicy,
                  now_ms: int, log_name: str) -> list[RecordError]:
    """The records of ``data`` that break ``policy``, in batch order.

    Each record is checked in Kafka's order: its offset delta must be its index in the batch
    (INVALID_RECORD), a compacted topic needs its key (INVALID_RECORD), and a CreateTime
    timestamp must lie within message.timestamp.before/after.max.ms of ``now_ms``
    (INVALID_TIMESTAMP). A section that does not hold exactly ``header.records_count``
    well-formed records raises InvalidRecord for the whole batch.
    """
    found: list[RecordError] = []
    compact = policy.compact
    append_time_batch = header.is_log_append_time
    # Bounds every acceptable timestamp lies within; the exact rule is _timestamp_problem's.
    low, high = ((now_ms - policy.before_max_ms, now_ms + policy.after_max_ms)
                 if policy.create_time else (-(2**64), 2**64))
    base_timestamp = header.base_timestamp
    if isinstance(data, memoryview):
        data = data.tobytes()  # indexing bytes is quicker than indexing a view
    end = len(data)
    pos = 0
    index = 0
    try:
        for index in range(header.records_count):
            # The leading varints: length, timestamp delta, offset delta (left in `raw`).
            # One- and two-byte forms are read inline: a call per field would cost more than
            # the rest of the check.
            for field in _LEADING_FIELDS:
                raw = data[pos]
                if raw < 0x80:
                    pos += 1
                elif data[pos + 1] < 0x80:
                    raw, pos = (raw & 0x7F) | (data[pos + 1] << 7), pos + 2
                else:
                    raw, pos = _uvarint(data, pos)
                if field == _LENGTH:
                    record_end = pos + ((raw >> 1) ^ -(raw & 1))
                    if record_end <= pos or record_end > end:
                        raise errors.InvalidRecord(f"{log_name}: record {index} has an invalid length")
                    pos += 1  # the unused attributes byte
                elif field == _TIMESTAMP_DELTA:
                    timestamp = (header.max_timestamp if append_time_batch
                                 else base_timestamp + ((raw >> 1) ^ -(raw & 1)))
            if pos + 3 > record_end:  # key length, value length and header count remain
                raise errors.InvalidRecord(f"{log_name}: record {index} is shorter than its fields")
            if raw != index << 1:  # zig-zag of a non-negative delta
                found.append(RecordError(index, errors.InvalidRecord,
                                         f"record {index} has offset delta {_signed(raw)}; the "
                                         f"records of a batch must have offset deltas 0, 1, 2, ..."))
            elif compact and (data[pos] == _NULL_KEY
                              or data[pos] >= 0x80 and _key_length(data, pos) == _NULL_KEY):
                found.append(RecordError(index, errors.InvalidRecord,
                                         f"record {index} has no key: {log_name} is a compacted "
                                         f"topic, which needs a key on every record"))
            elif append_time_batch or not low <= timestamp <= high:
                problem = _timestamp_problem(policy, append_time_batch, timestamp, now_ms)
                if problem is not None:
                    found.append(RecordError(index, errors.InvalidTimestamp,
                                             f"record {index} {problem}"))
            pos = record_end
    except IndexError:
        raise errors.InvalidRecord(f"{log_name}: record {index} runs past the end of the batch") from None
    if pos != end:
        raise errors.InvalidRecord(
            f"{log_name}: {end - pos} bytes follow the {header.records_count} records the batch declares")
    return found


def _timestamp_problem(policy: RecordPolicy, append_time_batch: bool, timestamp: int,
                       now_ms: int) -> str | None:
    """Why a record's timestamp is refused, or None (Kafka's validateTimestamp)."""
    if policy.create_time and timestamp != NO_TIMESTAMP:
        if timestamp - now_ms > policy.after_max_ms:
            return (f"has timestamp {timestamp}, more than message.timestamp.after.max.ms "
                    f"({policy.after_max_ms} ms) after the broker's time {now_ms}")
        if now_ms - timestamp > policy.before_max_ms:
            return (f"has timestamp {timestamp}, more than message.timestamp.before.max.ms "
                    f"({policy.before_max_ms} ms) before the broker's time {now_ms}")
        return None
    if append_time_batch:
        return "has the LogAppendTime timestamp type, which only the broker may set"
    return None
