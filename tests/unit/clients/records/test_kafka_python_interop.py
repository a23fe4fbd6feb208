"""Cross-checks against kafka-python's independent RecordBatch v2 implementation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from clients.records import compression
from clients.records.batch import Record, decode_batch, encode_batch, iter_record_batches
from clients.records.control import ABORT, COMMIT, decode_control_record, encode_end_txn_batch

# Codecs both sides can do in this environment.
SHARED_CODECS = [compression.NONE, compression.GZIP, compression.LZ4]

payloads = st.none() | st.binary(max_size=200)
# kafka-python cannot write null header values.
kp_headers = st.lists(st.tuples(st.text(max_size=10), st.binary(max_size=30)), max_size=3)
kp_records = st.lists(
    st.tuples(st.integers(min_value=0, max_value=2**42), payloads, payloads, kp_headers),
    min_size=1,
    max_size=20,
)


@settings(max_examples=60, deadline=None)
@given(rows=kp_records, codec=st.sampled_from(SHARED_CODECS), transactional=st.booleans())
def test_we_decode_kafka_python_batches(rows: list, codec: int, transactional: bool) -> None:
    producer_id, epoch, sequence = (4711, 3, 17) if transactional else (-1, -1, -1)
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
        batch_size=2**30,
    )
    # kafka-python sends uncompressed when compression does not pay; make sure it does.
    rows = rows + [(1, b"key", b"z" * 2000, [])]
    for delta, (timestamp, key, value, headers) in enumerate(rows):
        builder.append(delta, timestamp, key, value, headers)
    buf = bytes(builder.build())

    batch = decode_batch(buf)
    assert batch.header.compression == codec
    assert batch.header.is_transactional is transactional
    assert (batch.header.producer_id, batch.header.producer_epoch, batch.header.base_sequence) == (
        producer_id,
        epoch,
        sequence,
    )
    assert batch.header.records_count == len(rows)
    assert batch.header.max_timestamp == max(row[0] for row in rows)
    expected = [
        Record(delta, timestamp, key, value, tuple(headers))
        for delta, (timestamp, key, value, headers) in enumerate(rows)
    ]
    assert batch.records == expected


@settings(max_examples=60, deadline=None)
@given(rows=kp_records, codec=st.sampled_from(SHARED_CODECS), base_offset=st.integers(0, 2**40))
def test_kafka_python_decodes_our_batches(rows: list, codec: int, base_offset: int) -> None:
    records = [
        Record(base_offset + 2 * i, timestamp, key, value, tuple(headers))
        for i, (timestamp, key, value, headers) in enumerate(rows)
    ]
    buf = encode_batch(
        records,
        base_offset=base_offset,
        compression=codec,
        producer_id=99,
        producer_epoch=1,
        base_sequence=5,
        partition_leader_epoch=12,
    )
    theirs = DefaultRecordBatch(buf)
    assert theirs.validate_crc()
    assert theirs.base_offset == base_offset
    assert theirs.compression_type == codec
    assert theirs.leader_epoch == 12
    assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence) == (99, 1, 5)
    assert theirs.last_offset_delta == 2 * (len(rows) - 1)
    assert theirs.max_timestamp == max(r.timestamp for r in records)
    decoded = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in theirs]
    assert decoded == [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in records]


@pytest.mark.parametrize("codec", SHARED_CODECS)
def test_memory_records_stream_round_trips_both_ways(codec: int) -> None:
    builder = MemoryRecordsBuilder(magic=2, compression_type=codec, batch_size=2**20, offset=30)
    for i in range(50):
        builder.append(1_000 + i, f"k{i}".encode(), b"v" * i, [("n", str(i).encode())])
    builder.close()
    ours = list(iter_record_batches(builder.buffer()))
    assert [r.offset for b in ours for r in b.records] == list(range(30, 80))

    stream = b"".join(
        encode_batch([Record(None, 5, b"k", bytes([n]))], base_offset=n, compression=codec)
        for n in range(5)
    )
    records = MemoryRecords(stream)
    values = []
    while records.has_next():
        values += [(r.offset, r.value) for r in records.next_batch()]
    assert values == [(n, bytes([n])) for n in range(5)]


@pytest.mark.parametrize("control_type", [ABORT, COMMIT])
def test_kafka_python_reads_our_transaction_markers(control_type: int) -> None:
    buf = encode_end_txn_batch(
        control_type, producer_id=7, producer_epoch=2, coordinator_epoch=11, timestamp=123, base_offset=9
    )
    theirs = DefaultRecordBatch(buf)
    assert theirs.is_control_batch and theirs.is_transactional
    (marker,) = list(theirs)
    assert marker.type == control_type
    assert marker.commit is (control_type == COMMIT)
    ours = decode_batch(buf)
    assert ours.header.is_control
    assert decode_control_record(ours.records[0]).coordinator_epoch == 11
