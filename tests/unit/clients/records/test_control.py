"""Control records: transaction markers and other control types."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clients.records.batch import Record, decode_batch, encode_batch
from clients.records.control import (
    ABORT,
    COMMIT,
    LEADER_CHANGE,
    UNKNOWN,
    ControlRecord,
    decode_control_record,
    encode_control_key,
    encode_end_txn_batch,
    encode_end_txn_marker,
)
from clients.records.errors import CorruptRecordError


@given(
    control_type=st.sampled_from([ABORT, COMMIT]),
    coordinator_epoch=st.integers(min_value=-(2**31), max_value=2**31 - 1),
    producer_id=st.integers(min_value=0, max_value=2**63 - 1),
    producer_epoch=st.integers(min_value=0, max_value=2**15 - 1),
    base_offset=st.integers(min_value=0, max_value=2**50),
)
def test_end_txn_batch_round_trip(
    control_type: int, coordinator_epoch: int, producer_id: int, producer_epoch: int, base_offset: int
) -> None:
    buf = encode_end_txn_batch(
        control_type,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        coordinator_epoch=coordinator_epoch,
        timestamp=1_700_000_000_000,
        base_offset=base_offset,
        partition_leader_epoch=3,
    )
    batch = decode_batch(buf)
    assert batch.header.is_control and batch.header.is_transactional
    assert batch.header.producer_id == producer_id
    assert batch.header.producer_epoch == producer_epoch
    assert batch.header.base_offset == base_offset and batch.header.records_count == 1
    (record,) = batch.records
    assert record.offset == base_offset and record.timestamp == 1_700_000_000_000
    assert decode_control_record(record) == ControlRecord(0, control_type, coordinator_epoch)


def test_marker_wire_format_is_kafkas() -> None:
    marker = encode_end_txn_marker(COMMIT, 7, timestamp=5)
    assert marker.key == b"\x00\x00\x00\x01"
    assert marker.value == b"\x00\x00" + struct.pack(">i", 7)
    assert encode_end_txn_marker(ABORT, 0, timestamp=5).key == b"\x00\x00\x00\x00"


def test_other_control_types_decode_without_marker_value() -> None:
    record = Record(0, 0, encode_control_key(LEADER_CHANGE), b"opaque")
    decoded = decode_control_record(record)
    assert decoded.type == LEADER_CHANGE and decoded.coordinator_epoch is None
    assert not decoded.is_end_txn_marker and decoded.type_name == "LEADER_CHANGE"
    assert decode_control_record(Record(0, 0, encode_control_key(999), None)).type == UNKNOWN


@pytest.mark.parametrize(
    "key, value",
    [
        (None, b"\x00\x00\x00\x00\x00\x01"),
        (b"\x00\x00\x00", b"\x00\x00\x00\x00\x00\x01"),
        (b"\x00\x00\x00\x01", None),
        (b"\x00\x00\x00\x01", b"\x00\x00\x00"),
        (b"\xff\xff\x00\x01", b"\x00\x00\x00\x00\x00\x01"),
        (b"\x00\x00\x00\x00", b"\xff\xff\x00\x00\x00\x01"),
    ],
)
def test_malformed_control_records_raise_corrupt_record(key: bytes | None, value: bytes | None) -> None:
    with pytest.raises(CorruptRecordError):
        decode_control_record(Record(0, 0, key, value))


def test_marker_with_other_types_is_rejected() -> None:
    with pytest.raises(ValueError):
        encode_end_txn_marker(LEADER_CHANGE, 1, timestamp=0)


def test_control_flag_survives_a_plain_encode() -> None:
    buf = encode_batch([encode_end_txn_marker(ABORT, 2, timestamp=9)], is_control=True, is_transactional=True)
    header = decode_batch(buf).header
    assert header.is_control and header.attributes & 0x30 == 0x30
