"""RecordBatch v2 encode/decode: round trips and the fields Kafka defines."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clients.records import compression
from clients.records.batch import (
    LOG_APPEND_TIME,
    Record,
    decode_batch,
    encode_batch,
    iter_record_batches,
)
from clients.records.errors import CorruptRecordError, UnsupportedCompressionError
from clients.records.header import compute_crc, iter_batches, parse_header, stamp_log_append_time
from clients.records.record import _encode_record_checked, encode_record

from .strategies import payloads, record_lists

AVAILABLE = compression.available_codecs()


@settings(max_examples=150, deadline=None)
@given(data=record_lists(), codec=st.sampled_from(AVAILABLE))
def test_round_trip_keeps_every_record_field(data: tuple[int, list[Record]], codec: int) -> None:
    base_offset, records = data
    batch = decode_batch(encode_batch(records, base_offset=base_offset, compression=codec))
    assert batch.records == records
    assert batch.header.base_offset == base_offset
    assert batch.header.last_offset == records[-1].offset
    assert batch.header.records_count == len(records)
    assert batch.header.compression == codec
    assert batch.header.base_timestamp == records[0].timestamp
    assert batch.header.max_timestamp == max(r.timestamp for r in records)


@settings(max_examples=50, deadline=None)
@given(
    data=record_lists(max_size=5),
    producer_id=st.integers(min_value=-1, max_value=2**63 - 1),
    producer_epoch=st.integers(min_value=-1, max_value=2**15 - 1),
    base_sequence=st.integers(min_value=-1, max_value=2**31 - 1),
    leader_epoch=st.integers(min_value=-1, max_value=2**31 - 1),
    transactional=st.booleans(),
)
def test_round_trip_keeps_producer_fields(
    data: tuple[int, list[Record]],
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    leader_epoch: int,
    transactional: bool,
) -> None:
    base_offset, records = data
    buf = encode_batch(
        records,
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        partition_leader_epoch=leader_epoch,
        is_transactional=transactional,
    )
    header = decode_batch(buf).header
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (
        producer_id,
        producer_epoch,
        base_sequence,
    )
    assert header.partition_leader_epoch == leader_epoch
    assert header.is_transactional is transactional
    assert not header.is_control


def test_records_without_offsets_take_consecutive_offsets() -> None:
    records = [Record(None, 10, b"a", b"1"), Record(-1, 11, b"b", b"2"), Record(None, 12, None, b"3")]
    batch = decode_batch(encode_batch(records, base_offset=500))
    assert [r.offset for r in batch.records] == [500, 501, 502]


def test_compactor_rewrite_keeps_offsets_gaps_and_last_offset() -> None:
    kept = [Record(102, 5, b"k1", b"v"), Record(107, 6, b"k2", None)]
    buf = encode_batch(kept, base_offset=100, last_offset_delta=9, base_timestamp=1)
    batch = decode_batch(buf)
    assert [r.offset for r in batch.records] == [102, 107]
    assert batch.header.last_offset == 109
    assert [r.timestamp for r in batch.records] == [5, 6]
    assert batch.header.base_timestamp == 1


def test_empty_batch_keeps_producer_state_and_last_offset() -> None:
    buf = encode_batch([], base_offset=40, last_offset_delta=4, producer_id=9, producer_epoch=2)
    batch = decode_batch(buf)
    assert batch.records == []
    assert batch.header.records_count == 0
    assert batch.header.next_offset == 45
    assert batch.header.producer_id == 9


def test_empty_batch_without_last_offset_delta_is_rejected() -> None:
    with pytest.raises(ValueError):
        encode_batch([])


@pytest.mark.parametrize(
    "records, kwargs",
    [
        ([Record(5, 0, None, None), Record(5, 0, None, None)], {}),
        ([Record(3, 0, None, None)], {"base_offset": 4}),
        ([Record(9, 0, None, None)], {"last_offset_delta": 8}),
    ],
)
def test_bad_offsets_are_rejected_on_encode(records: list[Record], kwargs: dict) -> None:
    with pytest.raises(ValueError):
        encode_batch(records, **kwargs)


def test_delete_horizon_is_the_base_timestamp_and_record_times_survive() -> None:
    records = [Record(None, 1_000, b"k", None), Record(None, 2_000, b"j", b"v")]
    batch = decode_batch(encode_batch(records, delete_horizon_ms=90_000))
    assert batch.delete_horizon_ms == 90_000
    assert batch.header.attributes & 0x40
    assert [r.timestamp for r in batch.records] == [1_000, 2_000]
    assert decode_batch(encode_batch(records)).delete_horizon_ms is None


def test_log_append_time_batch_gives_every_record_the_batch_time() -> None:
    buf = bytearray(encode_batch([Record(None, 1, b"a", b"b"), Record(None, 2, b"c", b"d")]))
    stamp_log_append_time(buf, 0, parse_header(buf), 777)
    batch = decode_batch(buf)
    assert batch.header.is_log_append_time
    assert [r.timestamp for r in batch.records] == [777, 777]


def test_encode_with_log_append_time_sets_the_attribute() -> None:
    buf = encode_batch([Record(None, 5, None, b"x")], timestamp_type=LOG_APPEND_TIME)
    assert parse_header(buf).is_log_append_time


def test_iter_record_batches_walks_several_batches_and_fast_path_agrees() -> None:
    first = encode_batch([Record(None, 1, b"a", b"1")], base_offset=0)
    second = encode_batch([Record(None, 2, b"b", b"2"), Record(None, 3, b"c", b"3")], base_offset=1,
                          compression=compression.LZ4)
    buf = first + second
    batches = list(iter_record_batches(buf))
    assert [[r.offset for r in b.records] for b in batches] == [[0], [1, 2]]
    assert [pos for pos, _ in iter_batches(buf)] == [0, len(first)]


def test_decode_batch_at_position_inside_a_larger_buffer() -> None:
    buf = b"\xff" * 7 + encode_batch([Record(None, 1, b"k", b"v")], base_offset=3)
    assert decode_batch(buf, 7).records == [Record(3, 1, b"k", b"v")]


def test_crc_check_can_be_skipped() -> None:
    buf = bytearray(encode_batch([Record(None, 1, b"k", b"v")]))
    buf[17] ^= 0x01  # the CRC field itself
    with pytest.raises(CorruptRecordError):
        decode_batch(buf)
    assert decode_batch(buf, verify_crc=False).records[0].value == b"v"


def test_large_fields_use_multibyte_varints() -> None:
    big = bytes(range(256)) * 300
    records = [Record(0, 2**40, big, big[:20_000], (("h" * 200, big[:9_000]),))]
    records.append(Record(70_000, -5, None, b"", ()))
    assert decode_batch(encode_batch(records)).records == records


@pytest.mark.parametrize("offset_delta, timestamp_delta",
                         [(-1, 0), (2**31, 0), (0, 2**63), (0, -(2**63) - 1)])
def test_record_deltas_out_of_range_are_rejected(offset_delta: int,
                                                 timestamp_delta: int) -> None:
    with pytest.raises(ValueError):
        encode_record(offset_delta, timestamp_delta, None, b"v")


@given(st.integers(0, 2**31 - 1), st.integers(-(2**63), 2**63 - 1), payloads, payloads)
def test_the_table_path_and_the_checked_path_encode_a_record_alike(
        offset_delta: int, timestamp_delta: int, key: bytes | None,
        value: bytes | None) -> None:
    encoded = encode_record(offset_delta, timestamp_delta, key, value, (("h", b"x"),))
    assert encoded == _encode_record_checked(offset_delta, timestamp_delta, key, value,
                                             (("h", b"x"),))


@pytest.mark.usefixtures("codec_packages_missing")
@pytest.mark.parametrize("codec", [compression.SNAPPY, compression.ZSTD])
def test_missing_codec_package_fails_on_encode_and_decode(codec: int) -> None:
    assert not compression.is_available(codec)
    with pytest.raises(UnsupportedCompressionError):
        encode_batch([Record(None, 1, b"k", b"v")], compression=codec)
    plain = bytearray(encode_batch([Record(None, 1, b"k", b"v")]))
    plain[22] |= codec  # low byte of attributes
    struct.pack_into(">I", plain, 17, compute_crc(plain, 0, parse_header(plain)))
    with pytest.raises(UnsupportedCompressionError):
        decode_batch(plain)
