"""Topic config changes reach live logs, and a log loaded at startup waits for its config."""

from pathlib import Path

from broker.log import LogManager
from broker.log.config import LogConfig
from clients.clock import wall_clock_ms

from tests.unit.broker.log.helpers import NOW, batch, open_log, read_all

HOUR = 3_600_000
DAY = 24 * HOUR


def _config(overrides: dict[str, str]) -> LogConfig:
    return LogConfig.from_overrides(overrides)


def test_new_segment_bytes_rolls_the_active_segment(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for _ in range(3):
        log.append_as_leader(batch([b"x" * 100]), 0, NOW)
    assert len(log.segments) == 1
    log.update_config(_config({"segment.bytes": "300"}))
    # The active segment already holds ~500 bytes: the next append rolls, then every other.
    for _ in range(4):
        log.append_as_leader(batch([b"x" * 100]), 0, NOW)
    assert len(log.segments) == 5
    assert all(s.size <= 300 for s in log.segments[1:])
    assert [r[0] for r in read_all(log)] == list(range(7))
    log.close()


def test_new_segment_ms_rolls_the_active_segment(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch([b"a"]), 0, NOW)
    log.append_as_leader(batch([b"b"], timestamp=NOW + 2 * HOUR), 0, NOW + 2 * HOUR)
    assert len(log.segments) == 1
    log.update_config(_config({"segment.ms": str(HOUR)}))
    log.append_as_leader(batch([b"c"], timestamp=NOW + 2 * HOUR), 0, NOW + 2 * HOUR)
    assert [s.base_offset for s in log.segments] == [0, 2]
    log.close()


def test_index_settings_apply_to_the_active_segment_and_the_next_one(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for _ in range(4):
        log.append_as_leader(batch([b"x" * 100]), 0, NOW)
    assert log.active_segment.offset_index.entries == 0  # the default interval is 4096 bytes
    old_max_entries = log.active_segment.offset_index.max_entries
    log.update_config(_config({"index.interval.bytes": "100", "segment.index.bytes": "80"}))
    for _ in range(3):
        log.append_as_leader(batch([b"x" * 100]), 0, NOW)
    active = log.active_segment
    assert active.offset_index.entries == 3  # index.interval.bytes applies at once
    # segment.index.bytes from the next segment: the active indexes are already allocated.
    assert active.offset_index.max_entries == old_max_entries
    rolled = log.roll(NOW)
    assert rolled.offset_index.max_entries == 10
    for _ in range(20):
        log.append_as_leader(batch([b"x" * 100]), 0, NOW)
    assert len(log.segments) > 2  # rolled again on a full (small) index
    assert [r[0] for r in read_all(log)] == list(range(27))
    log.close()


def test_new_retention_ms_applies_at_the_next_check(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"segment.bytes": "200"})
    for n in range(6):
        log.append_as_leader(batch([b"r" * 100], timestamp=NOW + n * HOUR), 0, NOW + n * HOUR)
    log.update_high_watermark(log.log_end_offset)
    later = NOW + 5 * HOUR + HOUR // 2
    assert log.delete_old_segments(later) == 0  # the default keeps a week
    log.update_config(_config({"segment.bytes": "200", "retention.ms": str(3 * HOUR)}))
    assert log.delete_old_segments(later) == 3
    assert log.log_start_offset == 3
    log.close()


async def test_switching_cleanup_policy_to_compact(tmp_path: Path) -> None:
    manager = LogManager([tmp_path], now_ms=NOW)
    overrides = {"segment.bytes": "200", "retention.ms": str(HOUR)}
    log = manager.get_or_create_log("t", 0, config=overrides, now_ms=NOW)
    for _ in range(8):
        log.append_as_leader(batch([b"v" * 50], keys=[b"k"]), 0, NOW)
    log.update_high_watermark(log.log_end_offset)
    assert await manager.run_cleaner(NOW) == 0  # delete policy: no compaction
    manager.update_topic_config("t", {**overrides, "cleanup.policy": "compact"})
    assert log.config.compact and not log.config.delete
    assert manager.run_retention(NOW + DAY) == 0  # compact only: retention.ms no longer deletes
    assert await manager.run_cleaner(NOW) == 1
    assert [r[0] for r in read_all(log)] == [6, 7]  # 7 is in the active segment
    manager.update_topic_config("t", {**overrides, "cleanup.policy": "compact,delete"})
    log.append_as_leader(batch([b"v" * 50], keys=[b"k"]), 0, NOW)
    log.update_high_watermark(log.log_end_offset)
    # Segments the cleaner emptied date from their file's mtime, so judge from the real clock.
    assert manager.run_retention(wall_clock_ms() + DAY) > 0
    assert log.log_start_offset == 8
    manager.close()


async def test_a_loaded_log_is_left_alone_until_its_config_is_applied(tmp_path: Path) -> None:
    manager = LogManager([tmp_path], now_ms=NOW)
    compacted = {"cleanup.policy": "compact", "segment.bytes": "300"}
    short = {"retention.ms": str(HOUR), "segment.bytes": "300"}
    offsets = manager.get_or_create_log("__consumer_offsets", 0, config=compacted, now_ms=NOW)
    events = manager.get_or_create_log("events", 0, config=short, now_ms=NOW)
    for log in (offsets, events):
        for n in range(6):
            log.append_as_leader(batch([b"v" * 100], keys=[b"k%d" % (n % 2)]), 0, NOW)
        log.update_high_watermark(log.log_end_offset)
    manager.close()

    manager = LogManager([tmp_path], now_ms=NOW)
    offsets, events = manager.get_log("__consumer_offsets", 0), manager.get_log("events", 0)
    assert offsets is not None and events is not None
    # Loaded with the broker defaults (delete, a week): not to be acted on.
    assert offsets.config.cleanup_policy == ("delete",)
    assert not manager.config_applied("__consumer_offsets", 0)
    assert manager.run_retention(NOW + 30 * DAY) == 0
    assert await manager.run_cleaner(NOW) == 0
    assert len(offsets.segments) == 6 and offsets.log_start_offset == 0
    assert len(events.segments) == 6 and events.log_start_offset == 0

    # Metadata supplies the configs (ReplicaManager opens hosted partitions with them).
    manager.get_or_create_log("__consumer_offsets", 0, config=compacted)
    manager.update_topic_config("events", short)
    assert manager.config_applied("__consumer_offsets", 0) and manager.config_applied("events", 0)
    assert manager.run_retention(NOW + 2 * HOUR) == 5
    assert events.log_start_offset == 5
    assert offsets.log_start_offset == 0  # compacted: retention never deletes it
    assert await manager.run_cleaner(NOW) == 1
    assert [r[0] for r in read_all(offsets)] == [3, 4, 5]  # 5 is in the active segment
    manager.close()


def test_new_logs_need_no_config_round_trip(tmp_path: Path) -> None:
    manager = LogManager([tmp_path], now_ms=NOW)
    manager.get_or_create_log("t", 0, now_ms=NOW)
    assert manager.config_applied("t", 0)
    assert not manager.config_applied("absent", 0)
    manager.close()


def test_rebuilding_an_old_segment_after_the_interval_shrank_fits_its_index(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"segment.index.bytes": "40"})  # 5 offset index entries
    for _ in range(20):
        log.append_as_leader(batch([b"x" * 100]), 0, NOW)
    log.roll(NOW)
    log.update_config(_config({"segment.index.bytes": "40", "index.interval.bytes": "1"}))
    old = log.segments[0]
    old.rebuild_indexes()  # one entry per batch would not fit: the index just stops growing
    assert old.offset_index.entries == 5 and not old.offset_index.writable
    log.update_high_watermark(log.log_end_offset)
    assert [r[0] for r in read_all(log)] == list(range(20))
    log.close()
