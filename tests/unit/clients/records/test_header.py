"""The batch-header fast path, checked against hand-built batches."""

import struct

import pytest

from clients.records.errors import CorruptRecordError
from clients.records.header import (
    BATCH_HEADER_SIZE,
    assign_offsets,
    crc32c,
    iter_batches,
    parse_header,
)


def make_batch(records: int = 3, base_timestamp: int = 1000, payload: bytes = b"x" * 10) -> bytes:
    """A header-valid batch whose record section is opaque filler (the fast path never reads it)."""
    body = struct.pack(
        ">hiqqqhii", 0, records - 1, base_timestamp, base_timestamp + 5, 7, 1, 0, records
    ) + payload
    crc = crc32c(body)
    after_length = struct.pack(">ib", 0, 2) + struct.pack(">I", crc) + body
    return struct.pack(">qi", 0, len(after_length)) + after_length


def test_parse_header_reads_every_field() -> None:
    batch = make_batch(records=4)
    header = parse_header(batch)
    assert header.magic == 2
    assert header.records_count == 4
    assert header.last_offset_delta == 3
    assert header.size == len(batch)
    assert header.producer_id == 7 and header.producer_epoch == 1 and header.base_sequence == 0
    assert header.max_timestamp == 1005


def test_assign_offsets_stamps_offsets_and_epoch_without_breaking_crc() -> None:
    buf = bytearray(make_batch(records=3) + make_batch(records=2))
    info = assign_offsets(buf, 100, leader_epoch=5)
    assert (info.first_offset, info.last_offset, info.records_count, info.batches) == (100, 104, 5, 2)
    headers = [h for _, h in iter_batches(buf)]  # CRC still valid after stamping
    assert [h.base_offset for h in headers] == [100, 103]
    assert all(h.partition_leader_epoch == 5 for h in headers)


def test_log_append_time_rewrites_timestamp_and_crc() -> None:
    buf = bytearray(make_batch())
    info = assign_offsets(buf, 0, 0, log_append_time_ms=999_999)
    ((_, header),) = list(iter_batches(buf))
    assert header.is_log_append_time and header.max_timestamp == 999_999
    assert info.max_timestamp == 999_999


@pytest.mark.parametrize("damage", ["flip", "truncate", "magic", "empty"])
def test_bad_batches_raise_corrupt_record(damage: str) -> None:
    buf = bytearray(make_batch())
    if damage == "flip":
        buf[-1] ^= 0xFF
    elif damage == "truncate":
        buf = buf[:-3]
    elif damage == "magic":
        buf[16] = 1
    else:
        buf = bytearray()
    with pytest.raises(CorruptRecordError):
        assign_offsets(buf, 0, 0)


def test_short_header_is_rejected() -> None:
    with pytest.raises(CorruptRecordError):
        parse_header(make_batch()[: BATCH_HEADER_SIZE - 1])


def test_iter_batches_headers_equal_parse_header() -> None:
    buf = make_batch(records=2) + make_batch(records=5, base_timestamp=7)
    walked = list(iter_batches(buf))
    assert [pos for pos, _ in walked] == [0, len(make_batch(records=2))]
    assert [header for _, header in walked] == [parse_header(buf, pos) for pos, _ in walked]


def test_iter_batches_rejects_a_trailing_partial_header() -> None:
    buf = make_batch() + make_batch()[:20]
    with pytest.raises(CorruptRecordError, match="truncated"):
        list(iter_batches(buf))


def test_iter_batches_lets_the_caller_resize_between_batches() -> None:
    buf = bytearray(make_batch() + make_batch())
    seen = 0
    for _, header in iter_batches(buf):
        seen += 1
        if seen == 1:
            buf += make_batch()  # BufferError if a view of buf were held across the yield
        assert header.magic == 2
    assert seen == 2  # the walk covers the buffer as it was when it began
