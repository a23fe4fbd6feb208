"""Fetched bytes to Arrow: the same records the consumer's decoder sees, in Spark's schema."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.pandas.types import to_arrow_schema

from clients.consumer.records import parse_fetched_records
from clients.records.batch import LOG_APPEND_TIME, Record, encode_batch
from clients.records.compression import CODEC_IDS, is_available
from clients.records.control import ABORT, encode_end_txn_batch
from clients.records.errors import CorruptRecordError
from clients.spark.arrow_records import TransactionFilter, decode_fetched
from clients.spark.schema import arrow_schema, source_schema

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
CODECS = [name for name, codec in CODEC_IDS.items() if is_available(codec)]


def sample(n: int, first_ts: int = 1_700_000_000_000) -> list[Record]:
    return [Record(None, first_ts + i * 7,
                   None if i % 3 == 0 else b"key-%d" % i,
                   None if i % 11 == 5 else b"v" * (i * 13 % 300),
                   (("h", b"x" * i), ("null", None)) if i % 2 else ())
            for i in range(n)]


def rows_of(data: bytes, start: int, end: int, headers: bool = True) -> list[dict]:
    decoded = decode_fetched("t", 3, data, start, end, headers)
    assert decoded.batch is not None
    decoded.batch.validate(full=True)
    return decoded.batch.to_pylist()


def expected(data: bytes, start: int, end: int) -> list[dict]:
    out = []
    for r in parse_fetched_records("t", 3, data, start).records:
        if r.offset >= end:
            break
        out.append({"key": r.key, "value": r.value, "topic": "t", "partition": 3,
                    "offset": r.offset, "timestamp_ms": r.timestamp,
                    "timestampType": r.timestamp_type,
                    "headers": [{"key": k, "value": v} for k, v in r.headers]})
    return out


def normalise(rows: list[dict]) -> list[dict]:
    for row in rows:
        row["timestamp_ms"] = (row.pop("timestamp") - EPOCH) // timedelta(milliseconds=1)
    return rows


def test_schema_matches_what_pyspark_derives() -> None:
    for headers in (False, True):
        assert arrow_schema(headers).equals(to_arrow_schema(source_schema(headers),
                                                            timezone="UTC"))


@pytest.mark.parametrize("codec", CODECS)
def test_every_column_matches_the_consumer_decoder(codec: str) -> None:
    records = sample(200)
    data = (encode_batch(records[:80], base_offset=0, compression=CODEC_IDS[codec])
            + encode_batch(records[80:150], base_offset=80)
            + encode_batch(records[150:], base_offset=150, compression=CODEC_IDS[codec],
                           timestamp_type=LOG_APPEND_TIME))
    assert normalise(rows_of(data, 0, 10**9)) == expected(data, 0, 10**9)
    assert normalise(rows_of(data, 37, 163)) == expected(data, 37, 163)
    for start, end in ((0, 10**9), (37, 163), (80, 150)):
        want = [{k: v for k, v in row.items() if k != "headers"}
                for row in expected(data, start, end)]
        assert normalise(rows_of(data, start, end, headers=False)) == want


def test_headers_column_is_left_out_unless_asked() -> None:
    data = encode_batch(sample(5))
    decoded = decode_fetched("t", 0, data, 0, 100, False)
    assert decoded.batch is not None and "headers" not in decoded.batch.schema.names
    assert decoded.batch.schema.equals(arrow_schema(False))


def test_positions_skip_gaps_markers_and_partial_tails() -> None:
    # A compacted batch (offsets 0, 4, 9), a control batch at 10, then a cut-off batch.
    compacted = encode_batch([Record(0, 1, b"a", b"1"), Record(4, 1, b"b", b"2"),
                              Record(9, 1, b"c", b"3")], base_offset=0)
    marker = encode_end_txn_batch(ABORT, producer_id=7, producer_epoch=0, coordinator_epoch=0, base_offset=10,
                                  timestamp=1)
    tail = encode_batch(sample(3), base_offset=11)[:-5]
    decoded = decode_fetched("t", 0, compacted + marker + tail, 0, 100, False)
    assert decoded.batch is not None
    assert decoded.batch.column("offset").to_pylist() == [0, 4, 9]
    assert decoded.next_offset == 11 and decoded.truncated
    assert decode_fetched("t", 0, compacted, 0, 5, False).next_offset == 5
    # The range ends in a gap before the next batch: the position still reaches its end.
    after_gap = encode_batch(sample(2), base_offset=30)
    decoded = decode_fetched("t", 0, compacted + after_gap, 0, 20, False)
    assert decoded.batch is not None and decoded.batch.num_rows == 3
    assert decoded.next_offset == 20
    assert decode_fetched("t", 0, b"", 4, 9, False).batch is None


def test_read_committed_drops_aborted_transactions() -> None:
    aborted = encode_batch([Record(None, 1, None, b"no")], base_offset=0, producer_id=7,
                           producer_epoch=0, base_sequence=0, is_transactional=True)
    marker = encode_end_txn_batch(ABORT, producer_id=7, producer_epoch=0, coordinator_epoch=0, base_offset=1,
                                  timestamp=1)
    committed = encode_batch([Record(None, 1, None, b"yes")], base_offset=2, producer_id=7,
                             producer_epoch=0, base_sequence=1, is_transactional=True)
    data = aborted + marker + committed
    txn = TransactionFilter()
    txn.add([{"producer_id": 7, "first_offset": 0}])
    decoded = decode_fetched("t", 0, data, 0, 100, False, txn)
    assert decoded.batch is not None and decoded.batch.column("value").to_pylist() == [b"yes"]
    uncommitted = decode_fetched("t", 0, data, 0, 100, False)
    assert uncommitted.batch is not None
    assert uncommitted.batch.column("value").to_pylist() == [b"no", b"yes"]


def test_corrupt_batches_are_refused() -> None:
    data = bytearray(encode_batch(sample(4)))
    data[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        decode_fetched("t", 0, bytes(data), 0, 100, False)


def test_multi_byte_offset_and_timestamp_deltas() -> None:
    """Batches of thousands of records: offset deltas of three varint bytes, timestamp
    deltas of two and more."""
    records = [Record(None, 1_000 + i * 3_000, b"k%d" % i, b"x" * 100) for i in range(20_000)]
    decoded = decode_fetched("t", 0, encode_batch(records), 0, 10**9, False)
    assert decoded.batch is not None
    assert decoded.batch.column("offset").to_pylist() == list(range(20_000))
    assert decoded.batch.column("timestamp").cast("int64").to_pylist() == \
        [(1_000 + i * 3_000) * 1000 for i in range(20_000)]


def test_record_lengths_of_every_varint_size() -> None:
    """Lengths of one, two and three varint bytes (the walk's table covers the first two),
    empty keys and values, and keys longer than the value."""
    sizes = [0, 1, 50, 63, 64, 8_180, 8_191, 8_192, 70_000]
    records = [Record(None, 5 - i, b"k" * sizes[-1 - i] if i % 2 else b"",
                      b"v" * size, (("h", b"y" * size),) if i % 3 == 0 else ())
               for i, size in enumerate(sizes)]
    data = encode_batch(records) + encode_batch(records[:3], base_offset=len(sizes))
    assert normalise(rows_of(data, 0, 10**9)) == expected(data, 0, 10**9)


def _one_record_batch(key: bytes = b"abc") -> bytearray:
    """A batch of one record whose section reads: length, attributes, timestamp delta,
    offset delta, key length (at byte 65), key, value length, value, header count."""
    data = bytearray(encode_batch([Record(0, 0, key, b"xyz")]))
    assert data[65] == 2 * len(key)
    return data


@pytest.mark.parametrize("position, byte, why", [
    (61, 0x0F, "negative record length"),
    (61, 0x7E, "record longer than its batch"),
    (65, 0x7E, "key longer than its record"),
    (65, 0x03, "negative key length other than -1 is null; value overruns"),
])
def test_malformed_records_are_refused(position: int, byte: int, why: str) -> None:
    data = _one_record_batch()
    data[position] = byte
    if why.startswith("negative key"):
        # A key of length -2 is read as null, and what follows no longer fits the record.
        data[66:69] = b"\x7e\x7e\x7e"
    with pytest.raises(CorruptRecordError):
        decode_fetched("t", 0, bytes(data), 0, 100, False, verify_crc=False)


def test_a_varint_longer_than_ten_bytes_is_refused() -> None:
    data = _one_record_batch(key=b"k" * 20)
    data[63:76] = b"\x80" * 13   # the timestamp delta runs on
    with pytest.raises(CorruptRecordError):
        decode_fetched("t", 0, bytes(data), 0, 100, False, verify_crc=False)


_records = st.lists(st.builds(
    lambda key, value, headers, ts: Record(None, ts, key, value, tuple(headers)),
    st.none() | st.binary(max_size=300), st.none() | st.binary(max_size=9_000),
    st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=20)), max_size=3),
    st.integers(0, 2**41)), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_records, st.sampled_from([0] + [CODEC_IDS[c] for c in CODECS]),
                          st.booleans()), min_size=1, max_size=4),
       st.integers(0, 60), st.integers(0, 200), st.booleans())
def test_any_batches_decode_as_the_consumer_decodes_them(
        batches: list, start: int, span: int, headers: bool) -> None:
    data, offset = b"", 0
    for records, codec, log_append in batches:
        data += encode_batch(records, base_offset=offset, compression=codec,
                             timestamp_type=LOG_APPEND_TIME if log_append else 0)
        offset += len(records)
    want = expected(data, start, start + span)
    decoded = decode_fetched("t", 3, data, start, start + span, headers)
    if not want:
        assert decoded.batch is None
        return
    assert decoded.batch is not None
    decoded.batch.validate(full=True)
    rows = normalise(decoded.batch.to_pylist())
    assert rows == (want if headers else [{k: v for k, v in row.items() if k != "headers"}
                                          for row in want])


def test_records_with_many_headers_and_none() -> None:
    records = [Record(None, 1, b"k", b"v", tuple((f"h{j}", None if j % 4 == 1 else b"x" * j)
                                                  for j in range(25 if i % 3 == 0 else i % 3)))
               for i in range(30)]
    data = encode_batch(records, compression=CODEC_IDS["gzip"]) + encode_batch(
        [Record(None, 2, None, b"w")], base_offset=30)
    assert normalise(rows_of(data, 0, 100)) == expected(data, 0, 100)
    assert normalise(rows_of(data, 7, 31)) == expected(data, 7, 31)
