import os
from pathlib import Path

import pytest

from broker.log import errors
from broker.log.results import UpperBound
from clients.records.header import parse_header

from tests.unit.broker.log.helpers import NOW, batch, open_log, read_all, records_of


def test_leader_append_assigns_offsets_and_reads_back(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    first = log.append_as_leader(batch([b"a", b"b"]), leader_epoch=3, now_ms=NOW)
    second = log.append_as_leader(batch([b"c"]), leader_epoch=3, now_ms=NOW)
    assert (first.first_offset, first.last_offset) == (0, 1)
    assert (second.first_offset, second.last_offset) == (2, 2)
    assert log.log_end_offset == 3
    assert log.read(0, 1 << 20).ranges == ()  # HW still 0
    log.update_high_watermark(3)
    result = log.read(0, 1 << 20)
    assert result.high_watermark == 3 and result.log_end_offset == 3
    data = result.read_bytes()
    assert records_of(data) == [(0, None, b"a"), (1, None, b"b"), (2, None, b"c")]
    assert parse_header(data).partition_leader_epoch == 3
    assert log.epoch_cache.entries == [(3, 0)]
    log.close()


def test_read_respects_upper_bound_and_max_bytes(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for _ in range(5):
        log.append_as_leader(batch([b"x" * 100]), 0, NOW)
    log.update_high_watermark(2)
    assert [r[0] for r in records_of(log.read_bytes(0, 1 << 20))] == [0, 1]
    assert [r[0] for r in records_of(log.read_bytes(0, 1 << 20, UpperBound.LEO))] == [0, 1, 2, 3, 4]
    one = log.read(1, 1, UpperBound.LEO)  # min_one_batch returns the whole first batch
    assert [r[0] for r in records_of(one.read_bytes())] == [1]
    assert log.read(1, 1, UpperBound.LEO, min_one_batch=False).size == 1
    assert log.read(5, 100, UpperBound.LEO).ranges == ()
    with pytest.raises(errors.OffsetOutOfRange) as info:
        log.read(6, 100)
    assert info.value.error_code == 1
    log.close()


def test_file_range_can_be_sent_with_sendfile(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch([b"hello"]), 0, NOW)
    log.update_high_watermark(1)
    (file_range,) = log.read(0, 1 << 20).ranges
    out_fd = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT)
    sent = os.sendfile(out_fd, file_range.fd, file_range.position, file_range.size)
    os.close(out_fd)
    assert sent == file_range.size
    assert records_of((tmp_path / "out").read_bytes()) == [(0, None, b"hello")]
    log.close()


def test_validation_errors_carry_kafka_codes(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"max.message.bytes": "200", "message.timestamp.after.max.ms": "1000",
                              "message.timestamp.before.max.ms": "1000"})
    with pytest.raises(errors.MessageTooLarge) as too_large:
        log.append_as_leader(batch([b"x" * 300]), 0, NOW)
    assert too_large.value.error_code == 10
    with pytest.raises(errors.InvalidTimestamp) as future:
        log.append_as_leader(batch(timestamp=NOW + 5000), 0, NOW)
    assert future.value.error_code == 32
    with pytest.raises(errors.InvalidTimestamp):
        log.append_as_leader(batch(timestamp=NOW - 5000), 0, NOW)
    corrupt = batch([b"abc"])
    corrupt[-1] ^= 0xFF
    with pytest.raises(errors.CorruptMessage) as bad_crc:
        log.append_as_leader(corrupt, 0, NOW)
    assert bad_crc.value.error_code == 2
    with pytest.raises(errors.CorruptMessage):
        log.append_as_leader(batch([b"abc"])[:-3], 0, NOW)
    assert log.log_end_offset == 0 and log.active_segment.size == 0
    log.close()


def test_log_append_time_stamps_the_broker_clock(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"message.timestamp.type": "LogAppendTime"})
    result = log.append_as_leader(batch(timestamp=5), 0, now_ms=NOW + 42)
    assert result.log_append_time == NOW + 42
    header = parse_header(log.read_bytes(0, 1000, UpperBound.LEO))
    assert header.is_log_append_time and header.max_timestamp == NOW + 42
    log.close()


def test_follower_append_keeps_leader_offsets_and_epochs(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "leader")
    leader.append_as_leader(batch([b"a", b"b"]), 1, NOW)
    leader.append_as_leader(batch([b"c"]), 2, NOW)
    data = leader.read_bytes(0, 1 << 20, UpperBound.LEO)
    follower = open_log(tmp_path / "follower")
    follower.append_as_follower(data + data[:30], NOW)  # a partial trailing batch is ignored
    assert follower.log_end_offset == 3
    assert follower.epoch_cache.entries == [(1, 0), (2, 2)]
    with pytest.raises(errors.UnexpectedAppendOffset):
        follower.append_as_follower(data, NOW)
    assert read_all(follower) == read_all(leader)
    leader.close()
    follower.close()


def test_fsync_per_append_moves_recovery_point(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"flush.messages": "1"})
    log.append_as_leader(batch(), 0, NOW)
    assert log.recovery_point == 1
    default = open_log(tmp_path / "other")
    default.append_as_leader(batch(), 0, NOW)
    assert default.recovery_point == 0
    assert default.flush_if_due(NOW) is False
    log.close()
    default.close()


def test_roll_on_segment_bytes_and_segment_ms(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"segment.bytes": "400", "segment.ms": "1000"})
    for n in range(6):
        log.append_as_leader(batch([b"y" * 100]), 0, NOW)
    assert len(log.segments) == 3
    log.append_as_leader(batch([b"late"], timestamp=NOW + 2000), 0, NOW + 2000)
    log.append_as_leader(batch([b"later"], timestamp=NOW + 4000), 0, NOW + 4000)
    assert [s.base_offset for s in log.segments][-2:] == [6, 7]
    names = sorted(p.name for p in log.directory.glob("*.log"))
    assert names[0] == "00000000000000000000.log" and len(names) == len(log.segments)
    log.close()


def test_offset_for_timestamp(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"segment.bytes": "400", "index.interval.bytes": "50"})
    for n in range(20):
        log.append_as_leader(batch([b"v" * 50, b"w"], timestamp=NOW + n * 10), 0, NOW + 1000)
    assert log.offset_for_timestamp(NOW + 55) == (NOW + 60, 12)
    assert log.offset_for_timestamp(NOW) == (NOW, 0)
    assert log.offset_for_timestamp(NOW + 10_000) is None
    assert log.offset_for_timestamp(-2) == (-1, 0)
    assert log.offset_for_timestamp(-1) == (-1, 40)
    assert log.offset_for_timestamp(-3) == (NOW + 190, 39)
    log.close()
    reopened = open_log(tmp_path, {"segment.bytes": "400", "index.interval.bytes": "50"})
    assert reopened.offset_for_timestamp(NOW + 55) == (NOW + 60, 12)
    reopened.close()


def test_index_entries_match_the_log_after_close(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"index.interval.bytes": "100"})
    for _ in range(30):
        log.append_as_leader(batch([b"z" * 80]), 0, NOW)
    segment = log.active_segment
    entries = list(segment.offset_index)
    assert len(entries) > 5
    for offset, position in entries:
        header = parse_header(os.pread(segment.fd, 61, position))
        assert header.last_offset == offset
    log.close()
    assert (log.directory / "00000000000000000000.index").stat().st_size == 8 * len(entries)


def test_truncate_and_truncate_fully(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"segment.bytes": "300"})
    for n in range(10):
        log.append_as_leader(batch([str(n).encode() * 90]), n // 4, NOW)
    log.update_high_watermark(10)
    log.truncate_to(5)
    assert log.log_end_offset == 5 and log.high_watermark == 5
    assert [r[0] for r in read_all(log)] == [0, 1, 2, 3, 4]
    assert log.epoch_cache.entries == [(0, 0), (1, 4)]
    log.append_as_leader(batch([b"new"]), 7, NOW)
    assert read_all(log)[-1] == (5, None, b"new")
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (100, 100, 100)
    assert log.epoch_cache.entries == []
    assert log.append_as_leader(batch(), 8, NOW).first_offset == 100
    log.close()
    reopened = open_log(tmp_path, {"segment.bytes": "300"})
    assert (reopened.log_start_offset, reopened.log_end_offset) == (100, 101)
    reopened.close()


def test_reading_from_where_a_recent_append_began_reads_one_batch_header(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # Small batches: the sparse offset index points far behind the log end, so without the
    # segment's positions of its latest batches a follower's read there scans every header.
    log = open_log(tmp_path, {"index.interval.bytes": "100000"})
    for n in range(40):
        log.append_as_leader(batch([b"%d" % n]), 0, NOW)
    from broker.log import segment as segment_module

    preads: list[int] = []
    real_pread = os.pread

    def counting_pread(fd: int, size: int, position: int) -> bytes:
        preads.append(position)
        return real_pread(fd, size, position)

    monkeypatch.setattr(segment_module.os, "pread", counting_pread)
    tail = log.read(38, 1 << 20, UpperBound.LEO)
    assert len(preads) == 1
    assert records_of(tail.read_bytes()) == [(38, None, b"38"), (39, None, b"39")]
    monkeypatch.setattr(segment_module.os, "pread", real_pread)
    # A truncation forgets those positions: the batches written after it are found anew.
    log.truncate_to(20)
    log.append_as_leader(batch([b"a" * 50, b"b", b"c"]), 1, NOW)
    log.append_as_leader(batch([b"d"]), 1, NOW)
    assert [r[0] for r in records_of(log.read(21, 1 << 20, UpperBound.LEO).read_bytes())] == \
        [20, 21, 22, 23]
    assert records_of(log.read(23, 1 << 20, UpperBound.LEO).read_bytes()) == [(23, None, b"d")]
    assert [r[0] for r in records_of(log.read(3, 1 << 20, UpperBound.LEO).read_bytes())] == \
        list(range(3, 24))
    log.close()
