"""Segment files on disk: index preallocation and trimming, rolls, and when appends fsync."""

from pathlib import Path

import pytest

from broker.log import LogManager, errors, partition_log
from broker.log.results import UpperBound
from clients.records.header import crc_is_valid, iter_batches

from tests.unit.broker.log.helpers import NOW, batch, open_log, read_all

INDEX_BYTES = 4096


def _sizes(directory: Path, base: int) -> tuple[int, int]:
    stem = f"{base:020d}"
    return (directory / f"{stem}.index").stat().st_size, (directory / f"{stem}.timeindex").stat().st_size


def test_active_indexes_are_preallocated_and_trimmed_on_roll_and_close(tmp_path: Path) -> None:
    overrides = {"segment.index.bytes": str(INDEX_BYTES), "segment.bytes": "1000", "index.interval.bytes": "1"}
    log = open_log(tmp_path, overrides)
    log.append_as_leader(batch([b"a" * 100]), 0, NOW)
    assert _sizes(log.directory, 0) == (INDEX_BYTES, INDEX_BYTES - INDEX_BYTES % 12)
    for n in range(12):
        log.append_as_leader(batch([b"b" * 100], timestamp=NOW + n), 0, NOW)
    assert len(log.segments) > 1
    for segment in log.segments[:-1]:
        offsets = len(list(segment.offset_index))
        times = len(list(segment.time_index))
        assert offsets > 0 and times > 0
        assert _sizes(log.directory, segment.base_offset) == (8 * offsets, 12 * times)
    active = log.active_segment
    assert _sizes(log.directory, active.base_offset)[0] == INDEX_BYTES
    offsets = len(list(active.offset_index))
    log.close()
    # The final time-index entry (the segment's max timestamp) is written on close.
    assert _sizes(log.directory, active.base_offset) == (8 * offsets, 12 * active.time_index.entries)
    reopened = open_log(tmp_path, overrides)
    assert _sizes(reopened.directory, active.base_offset)[0] == INDEX_BYTES  # writable again
    assert len(list(reopened.active_segment.offset_index)) == offsets
    reopened.close()


def test_a_full_index_rolls_the_segment(tmp_path: Path) -> None:
    # Room for 4 offset-index entries (3 usable time-index entries): one entry per batch.
    log = open_log(tmp_path, {"segment.index.bytes": "48", "index.interval.bytes": "1"})
    for n in range(12):
        log.append_as_leader(batch([b"c" * 20], timestamp=NOW + n), 0, NOW)
    assert len(log.segments) >= 3
    assert all(s.size < 1000 for s in log.segments)  # not segment.bytes: the index filled up
    assert [r[0] for r in read_all(log)] == list(range(12))
    log.close()


def test_segment_ms_rolls_by_the_first_batch_timestamp(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"segment.ms": "1000"})
    log.append_as_leader(batch(timestamp=NOW), 0, NOW)
    log.append_as_leader(batch(timestamp=NOW + 500), 0, NOW + 1000)  # exactly segment.ms: no roll
    assert len(log.segments) == 1
    log.append_as_leader(batch(timestamp=NOW + 1001), 0, NOW + 1001)
    assert [s.base_offset for s in log.segments] == [0, 2]
    log.close()


def test_flush_messages_one_fsyncs_every_append(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"flush.messages": "1"})
    for n in range(3):
        log.append_as_leader(batch([b"d"]), 0, NOW)
        assert not log.active_segment.unflushed
        assert log.recovery_point == log.log_end_offset == n + 1
    log.close()


def test_fsync_per_append_makes_new_files_durable_in_their_directories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[Path] = []
    real = partition_log.fsync_dir

    def recording(directory: Path) -> None:
        synced.append(directory)
        real(directory)

    monkeypatch.setattr(partition_log, "fsync_dir", recording)
    log = open_log(tmp_path, {"flush.messages": "1", "segment.bytes": "400"})
    log.append_as_leader(batch([b"h" * 100]), 0, NOW)
    # The new partition directory in its log dir, and the first segment in the partition's.
    assert set(synced) == {tmp_path, log.directory}
    synced.clear()
    log.append_as_leader(batch([b"i" * 100]), 0, NOW)
    assert len(log.segments) == 1 and synced == []  # no new file: no directory fsync
    log.append_as_leader(batch([b"j" * 100]), 0, NOW)
    assert len(log.segments) == 2 and synced == [log.directory]  # the rolled-in segment's entry
    log.close()


def test_the_first_flush_after_an_unclean_start_syncs_the_directories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    open_log(tmp_path).append_as_leader(batch([b"k"]), 0, NOW)  # then "crashes": no close
    synced: list[Path] = []
    monkeypatch.setattr(partition_log, "fsync_dir", synced.append)
    reopened = open_log(tmp_path, clean_shutdown=False)
    reopened.flush()
    assert set(synced) == {tmp_path, reopened.directory}
    reopened.close()
    synced.clear()
    after_clean_close = open_log(tmp_path)  # a clean start has nothing left to sync
    after_clean_close.flush()
    assert synced == []
    after_clean_close.close()


def test_default_relies_on_replication_not_fsync(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch([b"e"]), 0, NOW)
    assert log.active_segment.unflushed and log.recovery_point == 0
    assert not log.flush_if_due(NOW + 10**9)  # flush.ms defaults to "never"
    log.close()


def test_flush_ms_flushes_when_due(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"flush.ms": "1000"}, now_ms=NOW)
    log.append_as_leader(batch([b"f"]), 0, NOW)
    assert not log.flush_if_due(NOW + 999)
    assert log.flush_if_due(NOW + 1000)
    assert not log.active_segment.unflushed and log.recovery_point == 1
    log.close()


def test_broker_level_fsync_per_append_mode(tmp_path: Path) -> None:
    manager = LogManager([tmp_path], {"log.flush.interval.messages": "1"}, now_ms=NOW)
    log = manager.get_or_create_log("durable", 0, now_ms=NOW)
    log.append_as_leader(batch([b"g"]), 0, NOW)
    assert log.config.flush_messages == 1
    assert not log.active_segment.unflushed and log.recovery_point == 1
    manager.close()


def test_log_append_time_batches_keep_a_valid_crc(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"message.timestamp.type": "LogAppendTime"})
    log.append_as_leader(batch([b"h"], timestamp=5) + batch([b"i"], timestamp=6), 0, NOW + 7)
    data = log.read_bytes(0, 1 << 20, UpperBound.LEO)
    headers = list(iter_batches(data, verify_crc=True))
    assert [h.max_timestamp for _, h in headers] == [NOW + 7, NOW + 7]
    assert all(crc_is_valid(data, pos, h) for pos, h in headers)
    log.close()


def test_a_corrupt_batch_changes_nothing(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch([b"ok"]), 1, NOW)
    bad = batch([b"a"]) + batch([b"b"])
    bad[-1] ^= 0x10  # the second batch's CRC fails: neither is written
    with pytest.raises(errors.CorruptMessage):
        log.append_as_leader(bad, 2, NOW)
    assert log.log_end_offset == 1
    assert log.epoch_cache.entries == [(1, 0)]
    assert (log.directory / "00000000000000000000.log").stat().st_size == log.active_segment.size
    log.close()


def test_flush_writes_the_active_index_entries_to_the_file(tmp_path: Path) -> None:
    import struct

    log = open_log(tmp_path, {"index.interval.bytes": "1"})
    for n in range(5):
        log.append_as_leader(batch([b"j" * 50]), 0, NOW)
    active = log.active_segment
    entries = list(active.offset_index)
    assert len(entries) == 4
    log.flush(NOW)
    raw = active.offset_index.path.read_bytes()
    assert len(raw) == 10 * 1024 * 1024  # still preallocated
    on_disk = [struct.unpack_from(">ii", raw, 8 * n) for n in range(len(entries) + 1)]
    assert on_disk == [(offset, position) for offset, position in entries] + [(0, 0)]
    log.truncate_to(2)
    log.flush(NOW)
    raw = active.offset_index.path.read_bytes()
    kept = list(active.offset_index)
    assert raw[: 8 * len(kept)] == b"".join(struct.pack(">ii", o, p) for o, p in kept)
    assert raw[8 * len(kept) : 8 * len(entries)] == bytes(8 * (len(entries) - len(kept)))
    log.close()
