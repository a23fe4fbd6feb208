"""The `__consumer_offsets` record formats."""

from __future__ import annotations

import msgpack
import pytest

from broker.group.records import (
    GroupKey,
    GroupValue,
    MemberValue,
    OffsetKey,
    OffsetsRecordError,
    OffsetValue,
    build_batch,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    iter_entries,
)
from clients.records.batch import Record, encode_batch
from clients.records.errors import CorruptRecordError


def test_keys_and_values_round_trip():
    offset_key = OffsetKey("g", "topic", 3)
    group_key = GroupKey("g")
    assert decode_key(encode_key(offset_key)) == offset_key
    assert decode_key(encode_key(group_key)) == group_key
    assert encode_key(offset_key) != encode_key(group_key)
    offset = OffsetValue(42, 7, "meta", 1000, -1)
    assert decode_value(offset_key, encode_value(offset)) == offset
    group = GroupValue("consumer", 5, "range", "m-1", 1234, (
        MemberValue("m-1", None, "client", "/127.0.0.1", 30000, 10000, b"\x00sub", b"\x00as"),
        MemberValue("m-2", "instance-2", "client", "/127.0.0.2", 30000, 10000, b"", b""),
    ))
    assert decode_value(group_key, encode_value(group)) == group
    assert encode_value(None) is None and decode_value(group_key, None) is None


def test_unreadable_records_raise_a_clear_error():
    with pytest.raises(OffsetsRecordError):
        decode_key(b"\xc1")
    with pytest.raises(OffsetsRecordError, match="unknown"):
        decode_key(msgpack.packb([9, "g"]))
    with pytest.raises(OffsetsRecordError):
        decode_value(OffsetKey("g", "t", 0), b"\x93\x09\x01\x02")


def test_batches_carry_entries_and_tombstones_in_order():
    entries = [(OffsetKey("g", "t", 0), OffsetValue(5)), (GroupKey("g"), None),
               (OffsetKey("g", "t", 0), None)]
    batch = build_batch(entries, 1000)
    decoded = list(iter_entries(batch))
    assert [(offset, key, value) for offset, key, value in decoded] == [
        (0, entries[0][0], entries[0][1]), (1, entries[1][0], None), (2, entries[2][0], None)]
    with pytest.raises(ValueError):
        build_batch([], 0)


def test_unreadable_records_and_corrupt_batches_can_be_skipped_with_their_offsets():
    good = build_batch([(OffsetKey("g", "t", 0), OffsetValue(5))], 0)
    bad_records = encode_batch([
        Record(None, 0, b"\xc1", b"x"),  # not msgpack
        Record(None, 0, encode_key(OffsetKey("g", "t", 1)), b"\x93\x09\x01\x02"),
        Record(None, 0, encode_key(OffsetKey("g", "t", 2)), encode_value(OffsetValue(7)))],
        base_offset=1)
    corrupt = bytearray(build_batch([(OffsetKey("g", "t", 0), OffsetValue(6))], 0))
    corrupt[:8] = (4).to_bytes(8, "big")  # base offset 4 (not covered by the CRC)
    corrupt[-1] ^= 0xFF  # covered by the CRC
    last = bytearray(build_batch([(GroupKey("g"), None)], 0))
    last[:8] = (5).to_bytes(8, "big")
    data = good + bad_records + bytes(corrupt) + bytes(last)
    with pytest.raises(OffsetsRecordError):
        list(iter_entries(data))
    with pytest.raises(CorruptRecordError, match="CRC"):
        list(iter_entries(bytes(corrupt)))
    skipped: list[tuple[int, str]] = []
    decoded = list(iter_entries(data, lambda offset, exc: skipped.append((offset, str(exc)))))
    assert decoded == [(0, OffsetKey("g", "t", 0), OffsetValue(5)),
                       (3, OffsetKey("g", "t", 2), OffsetValue(7)),
                       (5, GroupKey("g"), None)]
    assert [offset for offset, _ in skipped] == [1, 2, 4]
    assert "unreadable batch of offsets 4-4" in skipped[2][1] and "CRC" in skipped[2][1]
