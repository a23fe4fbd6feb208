"""Crash recovery: reopen after an unclean stop and check exactly what survives."""

import os
import struct
from pathlib import Path

import pytest

from broker.log.results import UpperBound
from clients.records.header import iter_batches

from tests.unit.broker.log.helpers import NOW, batch, open_log, read_all

OVERRIDES = {"segment.bytes": "1000", "index.interval.bytes": "100"}


def _write_log(tmp_path: Path, batches: int = 20) -> list[tuple[int, bytes | None, bytes | None]]:
    log = open_log(tmp_path, OVERRIDES)
    for n in range(batches):
        log.append_as_leader(batch([b"%03d" % n * 40]), 0, NOW)
    records = read_all(log)
    # Simulate a crash: files stay as written, no clean close (indexes keep preallocated size).
    return records


def _reopen(tmp_path: Path, recovery_point: int = 0):  # type: ignore[no-untyped-def]
    return open_log(tmp_path, OVERRIDES, clean_shutdown=False, recovery_point=recovery_point)


def _last_log_file(tmp_path: Path) -> Path:
    return sorted((tmp_path / "topic-0").glob("*.log"))[-1]


def test_torn_tail_is_truncated_and_nothing_before_is_lost(tmp_path: Path) -> None:
    records = _write_log(tmp_path)
    last = _last_log_file(tmp_path)
    os.truncate(last, last.stat().st_size - 7)
    log = _reopen(tmp_path)
    assert read_all(log) == records[:-1]
    assert log.log_end_offset == 19
    assert log.append_as_leader(batch([b"after"]), 0, NOW).first_offset == 19
    log.close()


def test_flipped_byte_in_last_batch_drops_only_that_batch(tmp_path: Path) -> None:
    records = _write_log(tmp_path)
    last = _last_log_file(tmp_path)
    with open(last, "r+b") as f:
        f.seek(last.stat().st_size - 3)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0x01]))
    log = _reopen(tmp_path)
    assert read_all(log) == records[:-1]
    log.close()


def test_corrupt_middle_segment_deletes_later_segments(tmp_path: Path) -> None:
    records = _write_log(tmp_path)
    files = sorted((tmp_path / "topic-0").glob("*.log"))
    assert len(files) >= 3
    victim = files[1]
    with open(victim, "r+b") as f:
        f.seek(70)
        f.write(b"\xff\xff")
    log = _reopen(tmp_path)
    survivors = read_all(log)
    assert survivors == records[: len(survivors)]
    assert log.segments[-1].log_path == victim
    assert len(log.segments) == 2
    log.close()


def test_missing_index_is_rebuilt_after_clean_shutdown(tmp_path: Path) -> None:
    log = open_log(tmp_path, OVERRIDES)
    for n in range(40):
        log.append_as_leader(batch([b"%03d" % n * 40]), 0, NOW)
    records = read_all(log)
    first_index = log.segments[0].offset_index.path
    entries = list(log.segments[0].offset_index)
    log.close()
    first_index.unlink()
    (tmp_path / "topic-0" / "00000000000000000000.timeindex").write_bytes(b"\x00" * 7)
    reopened = open_log(tmp_path, OVERRIDES)
    assert first_index.exists()
    assert list(reopened.segments[0].offset_index) == entries
    reopened.update_high_watermark(reopened.log_end_offset)
    assert read_all(reopened) == records
    assert reopened.offset_for_timestamp(NOW) == (NOW, 0)
    reopened.close()


def test_garbage_index_is_not_trusted(tmp_path: Path) -> None:
    log = open_log(tmp_path, OVERRIDES)
    for n in range(40):
        log.append_as_leader(batch([b"%03d" % n * 40]), 0, NOW)
    records = read_all(log)
    index = log.segments[0].offset_index.path
    log.close()
    index.write_bytes(b"\x00\x00\x00\x09\x00\x00\x99\x99" + b"\x00\x00\x00\x01\x00\x00\x00\x05")
    reopened = open_log(tmp_path, OVERRIDES)
    assert read_all(reopened) == records
    reopened.close()


def test_unclean_stop_without_marker_rebuilds_active_segment(tmp_path: Path) -> None:
    records = _write_log(tmp_path)
    log = _reopen(tmp_path, recovery_point=5)
    assert read_all(log) == records
    assert log.recovery_point == log.log_end_offset
    assert log.read(3, 100, UpperBound.LEO).size > 0
    log.close()


def test_producer_state_survives_a_crash(tmp_path: Path) -> None:
    log = open_log(tmp_path, OVERRIDES)
    for seq in range(10):
        log.append_as_leader(batch([b"p" * 150], producer_id=7, producer_epoch=0, base_sequence=seq), 0, NOW)
    log = _reopen(tmp_path)
    retry = log.append_as_leader(batch([b"p" * 150], producer_id=7, producer_epoch=0, base_sequence=9), 0, NOW)
    assert retry.duplicate and retry.first_offset == 9
    assert log.append_as_leader(batch([b"p"], producer_id=7, producer_epoch=0, base_sequence=10), 0, NOW).first_offset == 10
    log.close()


@pytest.mark.parametrize("keep", [1, 11, 40, 61, -1])
def test_cut_anywhere_inside_the_last_batch_keeps_every_earlier_batch(tmp_path: Path, keep: int) -> None:
    records = _write_log(tmp_path)
    last = _last_log_file(tmp_path)
    data = last.read_bytes()
    positions = [pos for pos, _ in iter_batches(data)]
    batch_start, batch_size = positions[-1], len(data) - positions[-1]
    cut = batch_start + (keep if keep > 0 else batch_size + keep)
    os.truncate(last, cut)
    log = _reopen(tmp_path)
    assert read_all(log) == records[:-1]
    assert log.log_end_offset == 19 and log.active_segment.size == batch_start
    assert last.stat().st_size == batch_start
    log.close()


def test_flipped_byte_reports_exactly_the_surviving_offsets(tmp_path: Path) -> None:
    records = _write_log(tmp_path)
    files = sorted((tmp_path / "topic-0").glob("*.log"))
    last = files[-1]
    data = bytearray(last.read_bytes())
    positions = [pos for pos, _ in iter_batches(bytes(data))]
    assert len(positions) >= 2
    data[positions[-2] + 70] ^= 0x40  # a record byte of the second-to-last batch
    last.write_bytes(bytes(data))
    log = _reopen(tmp_path)
    first_lost = int(last.name.split(".")[0]) + len(positions) - 2
    assert log.log_end_offset == first_lost
    assert read_all(log) == records[:first_lost]
    log.close()


def test_deleted_indexes_are_rebuilt_after_a_crash(tmp_path: Path) -> None:
    log = open_log(tmp_path, OVERRIDES)
    for n in range(40):
        log.append_as_leader(batch([b"%03d" % n * 40], timestamp=NOW + n), 0, NOW)
    records = read_all(log)
    expected = {s.base_offset: (list(s.offset_index), list(s.time_index)) for s in log.segments}
    directory = log.directory
    # Crash: nothing is closed, then every index file disappears.
    for path in list(directory.glob("*.index")) + list(directory.glob("*.timeindex")):
        path.unlink()
    reopened = _reopen(tmp_path, recovery_point=log.segments[-1].base_offset)
    assert read_all(reopened) == records
    for segment in reopened.segments:
        offsets, times = expected[segment.base_offset]
        assert list(segment.offset_index) == offsets
        if segment is not reopened.active_segment:
            assert list(segment.time_index) == times
    assert reopened.offset_for_timestamp(NOW + 25) == (NOW + 25, 25)
    reopened.close()


Records = list[tuple[int, bytes | None, bytes | None]]


def _indexed_segment(tmp_path: Path) -> tuple[Records, list[tuple[int, int]], Path, int]:
    """A closed log of 40 batches: its records, its first segment's index entries, that
    index's path and the segment's next offset."""
    log = open_log(tmp_path, OVERRIDES)
    for n in range(40):
        log.append_as_leader(batch([b"%03d" % n * 40]), 0, NOW)
    segment = log.segments[0]
    found = (read_all(log), list(segment.offset_index), segment.offset_index.path,
             segment.next_offset)
    log.close()
    return found


def _shift_entry(index: Path, slot: int, new_position: int) -> None:
    raw = bytearray(index.read_bytes())
    relative, _ = struct.unpack_from(">ii", raw, slot * 8)
    struct.pack_into(">ii", raw, slot * 8, relative, new_position)
    index.write_bytes(bytes(raw))


@pytest.mark.parametrize("where", ["mid-batch", "next batch"])
def test_ordered_but_wrong_index_entry_is_not_followed(tmp_path: Path, where: str) -> None:
    records, entries, index, _ = _indexed_segment(tmp_path)
    assert len(entries) >= 3
    # Entry 1 still lies between its neighbours, so the index looks ordered; but its position
    # points into a batch, or at the batch after the one ending at its offset.
    position = entries[1][1] + 10 if where == "mid-batch" else entries[2][1]
    _shift_entry(index, 1, position)
    reopened = open_log(tmp_path, OVERRIDES)
    reopened.update_high_watermark(reopened.log_end_offset)
    offset = entries[1][0]
    data = reopened.read(offset, 100, UpperBound.LEO).read_bytes()
    assert [h.base_offset for _, h in iter_batches(data)][0] == offset
    assert read_all(reopened) == records
    assert list(reopened.segments[0].offset_index) == entries  # rebuilt from the log
    reopened.close()
    again = open_log(tmp_path, OVERRIDES)
    assert list(again.segments[0].offset_index) == entries  # and written back
    again.close()


@pytest.mark.parametrize("where", ["mid-batch", "earlier batch"])
def test_last_index_entry_is_checked_at_load(tmp_path: Path, where: str) -> None:
    records, entries, index, next_offset = _indexed_segment(tmp_path)
    # The loader derives the segment's next offset from the last entry, so it checks that
    # one against the log before anything reads the segment.
    position = entries[-1][1] + 10 if where == "mid-batch" else entries[-2][1]
    _shift_entry(index, len(entries) - 1, position)
    reopened = open_log(tmp_path, OVERRIDES)
    assert list(reopened.segments[0].offset_index) == entries
    assert reopened.segments[0].next_offset == next_offset
    reopened.update_high_watermark(reopened.log_end_offset)
    assert read_all(reopened) == records
    reopened.close()


def _allocated(directory: Path, pattern: str) -> int:
    return sum(path.stat().st_blocks * 512 for path in directory.glob(pattern))


@pytest.mark.parametrize("recovery_point", [0, None])
def test_preallocated_indexes_stay_sparse_through_unclean_restarts(
        tmp_path: Path, recovery_point: int | None) -> None:
    """Issue 21: after kill -9 the active segment's indexes keep their preallocated size
    (10 MiB each by default); recovery used to zero every slot of them, allocating it all.
    With recovery_point None the segment counts as flushed, so its indexes are only
    checked, found wrong (their zero slots), and rebuilt."""
    log = open_log(tmp_path, {"index.interval.bytes": "100"})
    for n in range(50):
        log.append_as_leader(batch([b"%03d" % n * 40], timestamp=NOW + n), 0, NOW)
    log.flush()  # entries reach the files, which stay preallocated: the crash comes now
    directory = log.directory
    index = next(directory.glob("*.index"))
    assert index.stat().st_size == 10 * 1024 * 1024
    records = read_all(log)
    for restart in range(3):
        point = log.log_end_offset if recovery_point is None else recovery_point
        reopened = _reopen(tmp_path, recovery_point=point)
        assert read_all(reopened) == records
        assert reopened.offset_for_timestamp(NOW + 25) == (NOW + 25, 25)
        reopened.append_as_leader(batch([b"after-%d" % restart]), 0, NOW)
        records = read_all(reopened)
        reopened.flush()  # ...and crash again
        for pattern in ("*.index", "*.timeindex"):
            # 51+ batches of ~100 bytes: a few dozen entries, a page or two on disk.
            assert _allocated(directory, pattern) <= 64 * 1024, (restart, pattern)
        log = reopened
    assert _allocated(directory, "*") <= 256 * 1024
    reopened.close()
