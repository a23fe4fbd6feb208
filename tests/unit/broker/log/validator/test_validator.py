"""broker.log.validator: per-record checks and recompression on the leader's produce path,
as pure functions over batch bytes, and through PartitionLog.append_as_leader."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Sequence

import pytest

from broker.log import errors
from broker.log.config import LogConfig
from broker.log.results import UpperBound
from broker.log.validator import RecordPolicy, check_records, validate_records
from clients.records import compression
from clients.records.batch import (
    LOG_APPEND_TIME,
    assemble_batch,
    decode_batch,
    encode_batch,
    iter_record_batches,
)
from clients.records.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD
from clients.records.header import (
    BATCH_HEADER_SIZE,
    compute_crc,
    crc_is_valid,
    iter_batches,
    parse_header,
)
from clients.records.record import Record, encode_record
from tests.unit.broker.log.helpers import NOW, open_log

MINUTE = 60_000


def policy(**overrides: str) -> RecordPolicy:
    return RecordPolicy.from_config(LogConfig.from_overrides(overrides))


def make_batch(keys: Sequence[bytes | None], *, timestamps: Sequence[int] | None = None,
               codec: int = NONE, producer_id: int = -1, base_sequence: int = -1) -> bytearray:
    stamps = timestamps if timestamps is not None else [NOW] * len(keys)
    records = [Record(None, ts, key, b"value-%d" % i, (("h", b"%d" % i),))
               for i, (key, ts) in enumerate(zip(keys, stamps))]
    return bytearray(encode_batch(records, compression=codec, producer_id=producer_id,
                                  producer_epoch=0 if producer_id >= 0 else -1,
                                  base_sequence=base_sequence))


def headers_of(data: bytes | bytearray) -> list:  # type: ignore[type-arg]
    return list(iter_batches(data, verify_crc=False))


def validate(data: bytearray, rules: RecordPolicy, now: int = NOW) -> bytearray | memoryview:
    return validate_records(data, headers_of(data), rules, now, "t-0")


def section(data: bytes | bytearray) -> bytes:
    return bytes(data[BATCH_HEADER_SIZE:])


# -- the policy: what the topic asks and what the header settles --------------------------

def test_policy_follows_the_topic_configs() -> None:
    assert policy() == RecordPolicy()
    assert policy(**{"cleanup.policy": "compact,delete"}).compact
    assert policy(**{"compression.type": "producer"}).target_codec is None
    assert policy(**{"compression.type": "uncompressed"}).target_codec == NONE
    lz4 = policy(**{"compression.type": "lz4", "compression.lz4.level": "3"})
    assert (lz4.target_codec, lz4.level) == (LZ4, 3)
    assert policy(**{"compression.type": "gzip"}).level == -1
    assert policy(**{"compression.type": "zstd", "compression.zstd.level": "7"}).level == 7
    assert policy(**{"compression.type": "snappy"}).level is None
    assert not policy(**{"message.timestamp.type": "LogAppendTime"}).create_time


def test_a_plain_topic_decides_from_the_header() -> None:
    rules = policy()
    header = parse_header(make_batch([None, None], timestamps=[NOW - 10 * MINUTE, NOW]))
    assert not rules.needs_records(header, NOW) and not rules.converts(header)
    # A max timestamp past message.timestamp.after.max.ms (1 h) needs the records' indexes.
    future = parse_header(make_batch([None, None], timestamps=[NOW, NOW + 61 * MINUTE]))
    assert rules.needs_records(future, NOW)


def test_a_before_bound_needs_the_records_unless_one_record_settles_it() -> None:
    rules = policy(**{"message.timestamp.before.max.ms": str(MINUTE)})
    # The first timestamp is no lower bound: a later record may be older.
    assert rules.needs_records(parse_header(make_batch([None, None])), NOW)
    assert not rules.needs_records(parse_header(make_batch([None])), NOW)
    assert rules.needs_records(parse_header(make_batch([None], timestamps=[NOW - 2 * MINUTE])), NOW)


def test_compaction_and_codecs_decide_per_topic() -> None:
    assert policy(**{"cleanup.policy": "compact"}).needs_records(parse_header(make_batch([b"k"])), NOW)
    to_lz4 = policy(**{"compression.type": "lz4"})
    assert to_lz4.converts(parse_header(make_batch([None])))
    assert not to_lz4.converts(parse_header(make_batch([None], codec=LZ4)))
    assert not to_lz4.needs_records(parse_header(make_batch([None])), NOW)
    append_time = policy(**{"message.timestamp.type": "LogAppendTime"})
    assert not append_time.needs_records(parse_header(make_batch([None], timestamps=[0])), NOW)


# -- per-record checks ---------------------------------------------------------------------

def test_compacted_topic_refuses_each_keyless_record() -> None:
    data = make_batch([b"a", None, b"c", None, None])
    found = check_records(section(data), parse_header(data), policy(**{"cleanup.policy": "compact"}),
                          NOW, "t-0")
    assert [(e.batch_index, e.error) for e in found] == [(1, errors.InvalidRecord),
                                                          (3, errors.InvalidRecord),
                                                          (4, errors.InvalidRecord)]
    assert "key" in found[0].message


def test_every_record_timestamp_is_checked_against_both_bounds() -> None:
    rules = policy(**{"message.timestamp.before.max.ms": str(MINUTE),
                      "message.timestamp.after.max.ms": str(MINUTE)})
    stamps = [NOW, NOW + 2 * MINUTE, NOW - 30_000, NOW - 2 * MINUTE, -1]
    data = make_batch([None] * 5, timestamps=stamps)
    found = check_records(section(data), parse_header(data), rules, NOW, "t-0")
    assert [(e.batch_index, e.error) for e in found] == [(1, errors.InvalidTimestamp),
                                                          (3, errors.InvalidTimestamp)]
    assert str(NOW + 2 * MINUTE) in found[0].message and "after.max.ms" in found[0].message
    assert "before.max.ms" in found[1].message


def raw_batch(deltas: Sequence[int], trailing: bytes = b"", count: int | None = None) -> bytearray:
    body = b"".join(encode_record(d, 0, b"k", b"v") for d in deltas) + trailing
    return bytearray(assemble_batch(body, records_count=len(deltas) if count is None else count,
                                    base_offset=0, last_offset_delta=len(deltas) - 1,
                                    base_timestamp=NOW, max_timestamp=NOW))


def test_an_offset_delta_out_of_sequence_is_an_invalid_record() -> None:
    data = raw_batch([0, 5, 2])
    found = check_records(section(data), parse_header(data), policy(**{"cleanup.policy": "compact"}),
                          NOW, "t-0")
    assert [(e.batch_index, e.error) for e in found] == [(1, errors.InvalidRecord)]
    assert "offset delta 5" in found[0].message


@pytest.mark.parametrize("data", [raw_batch([0, 1], trailing=b"\x00"), raw_batch([0, 1], count=3),
                                  raw_batch([0, 1], count=1)], ids=["extra-bytes", "fewer", "more"])
def test_records_that_do_not_fill_the_batch_refuse_it_whole(data: bytearray) -> None:
    with pytest.raises(errors.InvalidRecord) as refused:
        check_records(section(data), parse_header(data), policy(**{"cleanup.policy": "compact"}),
                      NOW, "t-0")
    assert refused.value.record_errors == ()


# -- validate_records: refusals, and the batch left alone ---------------------------------

def test_a_batch_needing_nothing_is_returned_as_is() -> None:
    data = make_batch([None, None])
    assert validate(data, policy()) is data
    keyed = make_batch([b"a", b"b"])
    assert validate(keyed, policy(**{"cleanup.policy": "compact"})) is keyed


def test_refused_records_carry_their_indexes_and_messages() -> None:
    data = make_batch([b"a", None, None])
    with pytest.raises(errors.InvalidRecord) as refused:
        validate(data, policy(**{"cleanup.policy": "compact"}))
    assert [index for index, _ in refused.value.record_errors] == [1, 2]
    assert refused.value.error_code == 87 and "2 of 3 records refused" in str(refused.value)


def test_any_timestamp_refusal_makes_the_batch_invalid_timestamp() -> None:
    rules = policy(**{"cleanup.policy": "compact", "message.timestamp.after.max.ms": str(MINUTE)})
    data = make_batch([None, b"b", b"c"], timestamps=[NOW, NOW + 2 * MINUTE, NOW])
    with pytest.raises(errors.InvalidTimestamp) as refused:
        validate(data, rules)
    assert refused.value.error_code == 32
    assert [index for index, _ in refused.value.record_errors] == [0, 1]


def test_a_bad_crc_is_corrupt_before_any_record_is_judged() -> None:
    data = make_batch([None])  # keyless: refused on a compacted topic, were its CRC good
    data[-1] ^= 0xFF
    with pytest.raises(errors.CorruptMessage):
        validate(data, policy(**{"cleanup.policy": "compact"}))
    with pytest.raises(errors.CorruptMessage):  # never re-checksummed into a valid batch
        validate(data, policy(**{"compression.type": "gzip"}))


def test_undecodable_compressed_records_are_corrupt() -> None:
    forged = bytearray(assemble_batch(b"not lz4 at all", records_count=1, base_offset=0,
                                      last_offset_delta=0, base_timestamp=NOW, max_timestamp=NOW))
    # Flag the payload lz4 and fix the CRC, so that only decompressing it can fail.
    struct.pack_into(">h", forged, 21, LZ4)
    struct.pack_into(">I", forged, 17, compute_crc(forged, 0, parse_header(forged)))
    with pytest.raises(errors.CorruptMessage):
        validate(forged, policy(**{"compression.type": "gzip"}))


# -- recompression -------------------------------------------------------------------------

@pytest.mark.parametrize("source,target,name", [
    (LZ4, ZSTD, "zstd"), (NONE, LZ4, "lz4"), (NONE, GZIP, "gzip"), (GZIP, NONE, "uncompressed"),
    (ZSTD, SNAPPY, "snappy")])
def test_recompression_keeps_every_record_and_header_field(source: int, target: int, name: str) -> None:
    if not (compression.is_available(source) and compression.is_available(target)):
        pytest.skip(f"codec {source} or {target} is not installed")
    stamps = [NOW - 5, NOW + 7, NOW - 9]
    data = make_batch([b"a", None, b"c"], timestamps=stamps, codec=source, producer_id=42,
                      base_sequence=17)
    converted = validate(data, policy(**{"compression.type": name}))
    assert converted is not data
    (pos, header), = headers_of(converted)
    before = parse_header(data)
    assert header.compression == target and crc_is_valid(converted, 0, header)
    for field in ("base_offset", "last_offset_delta", "base_timestamp", "max_timestamp",
                  "producer_id", "producer_epoch", "base_sequence", "records_count"):
        assert getattr(header, field) == getattr(before, field), field
    assert decode_batch(converted).records == decode_batch(data).records


def test_recompression_uses_the_topic_level() -> None:
    values = [bytes(range(256)) * 8 + b"%d" % i for i in range(40)]
    records = [Record(None, NOW, b"k", v) for v in values]
    data = bytearray(encode_batch(records))
    fast = validate(data, policy(**{"compression.type": "gzip", "compression.gzip.level": "1"}))
    best = validate(data, policy(**{"compression.type": "gzip", "compression.gzip.level": "9"}))
    assert len(best) < len(fast)
    assert decode_batch(best).records == decode_batch(fast).records == decode_batch(data).records


def test_a_codec_this_process_lacks_is_refused_not_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> None:
        raise compression.UnsupportedCompressionError("zstd compression needs the zstandard package")

    monkeypatch.setattr(compression, "_get_zstd", missing)
    with pytest.raises(errors.UnsupportedCompressionType) as refused:
        validate(make_batch([b"a"]), policy(**{"compression.type": "zstd"}))
    assert refused.value.error_code == 76 and "zstandard" in str(refused.value)


# -- through the log -----------------------------------------------------------------------

def test_log_appends_nothing_of_a_refused_batch_then_takes_keyed_records(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"cleanup.policy": "compact"})
    with pytest.raises(errors.InvalidRecord) as refused:
        log.append_as_leader(make_batch([b"a", None, b"c"]), 0, NOW)
    assert [index for index, _ in refused.value.record_errors] == [1]
    assert log.log_end_offset == 0 and log.active_segment.size == 0
    result = log.append_as_leader(make_batch([b"a", b"b"]), 0, NOW)
    assert (result.first_offset, result.last_offset) == (0, 1)
    log.close()


def test_log_stores_batches_in_the_topic_codec(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"compression.type": "lz4"})
    log.append_as_leader(make_batch([b"a", b"b"]), 0, NOW)
    log.append_as_leader(make_batch([b"c"], codec=GZIP), 0, NOW)
    data = log.read(0, 1 << 20, UpperBound.LEO).read_bytes()
    assert [h.compression for _, h in iter_batches(data)] == [LZ4, LZ4]
    assert [(r.offset, r.key) for b in iter_record_batches(data) for r in b.records] == \
        [(0, b"a"), (1, b"b"), (2, b"c")]
    log.close()


def test_a_batch_grown_past_max_message_bytes_by_conversion_is_too_large(tmp_path: Path) -> None:
    data = bytearray(encode_batch([Record(None, NOW, b"k", b"z" * 4000)], compression=GZIP))
    log = open_log(tmp_path, {"compression.type": "uncompressed", "max.message.bytes": "1000"})
    assert len(data) < 1000
    with pytest.raises(errors.MessageTooLarge):
        log.append_as_leader(data, 0, NOW)
    assert log.log_end_offset == 0
    log.close()


def test_timestamps_past_the_after_bound_are_refused_by_index(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"message.timestamp.after.max.ms": str(MINUTE)})
    stamps = [NOW, NOW + 2 * MINUTE, NOW, NOW + 3 * MINUTE]
    with pytest.raises(errors.InvalidTimestamp) as refused:
        log.append_as_leader(make_batch([None] * 4, timestamps=stamps), 0, NOW)
    assert [index for index, _ in refused.value.record_errors] == [1, 3]
    assert log.log_end_offset == 0
    log.close()


def test_a_config_change_applies_to_the_next_append(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(make_batch([None]), 0, NOW)
    log.update_config(LogConfig.from_overrides({"cleanup.policy": "compact",
                                                "compression.type": "gzip"}))
    with pytest.raises(errors.InvalidRecord):
        log.append_as_leader(make_batch([None]), 0, NOW)
    log.append_as_leader(make_batch([b"k"]), 0, NOW)
    data = log.read(0, 1 << 20, UpperBound.LEO).read_bytes()
    assert [h.compression for _, h in iter_batches(data)] == [NONE, GZIP]
    log.close()


def test_a_producer_may_not_send_log_append_time_batches() -> None:
    records = [Record(None, NOW, b"k", b"v"), Record(None, NOW, b"k", b"w")]
    data = bytearray(encode_batch(records, timestamp_type=LOG_APPEND_TIME))
    with pytest.raises(errors.InvalidTimestamp) as refused:
        validate(data, policy(**{"message.timestamp.type": "LogAppendTime"}))
    assert [index for index, _ in refused.value.record_errors] == [0, 1]
    # On a CreateTime topic their (batch) timestamp is held to the bounds like any other.
    assert validate(data, policy()) is data
