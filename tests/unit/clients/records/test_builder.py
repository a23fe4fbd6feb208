"""BatchBuilder: incremental batches with size tracking for the producer."""

from __future__ import annotations

import pytest

from clients.records import compression
from clients.records.batch import Record, decode_batch
from clients.records.builder import BatchBuilder


def test_builds_a_batch_with_consecutive_offsets_and_timestamps() -> None:
    builder = BatchBuilder(base_offset=10)
    assert builder.try_append(1_000, b"a", b"1") == 0
    assert builder.try_append(990, None, b"2", (("h", None),)) == 1
    assert builder.append(1_005, b"c", None) == 2
    batch = decode_batch(builder.build())
    assert batch.records == [
        Record(10, 1_000, b"a", b"1"),
        Record(11, 990, None, b"2", (("h", None),)),
        Record(12, 1_005, b"c", None),
    ]
    assert batch.header.base_timestamp == 1_000 and batch.header.max_timestamp == 1_005
    assert builder.max_timestamp == 1_005


def test_estimated_size_is_exact_for_uncompressed_batches() -> None:
    builder = BatchBuilder()
    for i in range(100):
        builder.append(i, b"key%d" % i, b"v" * i, (("x", b"y"),))
    assert len(builder.build()) == builder.estimated_size


def test_refuses_records_beyond_max_bytes_but_always_takes_the_first() -> None:
    builder = BatchBuilder(max_bytes=200)
    assert builder.try_append(0, None, b"x" * 500) == 0  # first record always fits
    assert builder.try_append(0, None, b"y") is None
    assert not builder.has_room_for(0, None, b"y")

    builder = BatchBuilder(max_bytes=200)
    appended = 0
    while builder.try_append(0, None, b"z" * 20) is not None:
        appended += 1
    assert builder.estimated_size <= 200 < builder.estimated_size + 25
    assert decode_batch(builder.build()).header.records_count == appended == builder.records_count


def test_producer_state_set_late_lands_in_the_header() -> None:
    builder = BatchBuilder(compression=compression.LZ4)
    builder.append(5, b"k", b"v" * 1000)
    builder.set_producer_state(producer_id=42, producer_epoch=3, base_sequence=100, is_transactional=True)
    header = decode_batch(builder.build()).header
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (42, 3, 100)
    assert header.is_transactional and header.compression == compression.LZ4


def test_build_closes_the_builder_and_is_idempotent() -> None:
    builder = BatchBuilder()
    builder.append(0, b"k", b"v")
    first = builder.build()
    assert builder.build() == first and builder.is_closed
    with pytest.raises(ValueError):
        builder.append(1, b"k", b"v")


def test_empty_builder_cannot_build() -> None:
    builder = BatchBuilder()
    assert builder.is_empty
    with pytest.raises(ValueError):
        builder.build()
