from pathlib import Path

import pytest

from broker.log import errors

from tests.unit.broker.log.helpers import NOW, batch, open_log, read_all

HOUR = 3_600_000


def _fill(log, count: int, start_ts: int = NOW, step: int = HOUR) -> None:  # type: ignore[no-untyped-def]
    for n in range(count):
        # Keyed, so that compacted topics accept them too.
        log.append_as_leader(batch([b"r" * 100], keys=[b"k%d" % n], timestamp=start_ts + n * step),
                             0, start_ts + n * step)


def test_retention_ms_deletes_old_segments_never_the_active_one(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"segment.bytes": "200", "retention.ms": str(3 * HOUR), "file.delete.delay.ms": "0"})
    _fill(log, 6)
    log.update_high_watermark(log.log_end_offset)
    assert len(log.segments) == 6
    deleted = log.delete_old_segments(NOW + 100 * HOUR)
    assert deleted == 5 and len(log.segments) == 1
    assert log.log_start_offset == 5
    assert log.delete_pending_files(NOW + 100 * HOUR) == 5
    assert sorted(p.name for p in log.directory.glob("*.log")) == ["00000000000000000005.log"]
    with pytest.raises(errors.OffsetOutOfRange):
        log.read(0, 100)
    log.close()


def test_retention_ms_keeps_young_segments(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"segment.bytes": "200", "retention.ms": str(3 * HOUR)})
    _fill(log, 6)
    log.update_high_watermark(log.log_end_offset)
    # now = last batch + 3.5h: batches at +0h, +1h, +2h are more than 3h old.
    assert log.delete_old_segments(NOW + 5 * HOUR + HOUR // 2) == 3
    assert log.log_start_offset == 3
    log.close()


def test_retention_stops_at_the_high_watermark(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"segment.bytes": "200", "retention.ms": "1"})
    _fill(log, 6)
    log.update_high_watermark(2)
    assert log.delete_old_segments(NOW + 100 * HOUR) == 2
    log.close()


def test_retention_bytes(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"segment.bytes": "200", "retention.bytes": "450"})
    _fill(log, 6, step=0)
    log.update_high_watermark(log.log_end_offset)
    size = log.segments[0].size
    log.delete_old_segments(NOW)
    assert log.size_in_bytes <= 450 + size
    assert log.size_in_bytes - log.segments[0].size <= 450
    assert log.log_start_offset == 6 - len(log.segments)
    log.close()


def test_delete_records_moves_log_start_and_frees_segments(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"segment.bytes": "200"})
    _fill(log, 6, step=0)
    log.update_high_watermark(4)
    with pytest.raises(errors.OffsetOutOfRange):
        log.delete_records_before(5)
    assert log.delete_records_before(3) == 3
    assert read_all(log)[0][0] == 3
    assert log.delete_old_segments(NOW) == 3
    assert log.segments[0].base_offset == 3
    log.close()
    reopened = open_log(tmp_path, {"segment.bytes": "200"}, log_start_offset=3)
    assert reopened.log_start_offset == 3
    reopened.close()


def test_compact_only_policy_ignores_time_retention(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"segment.bytes": "200", "retention.ms": "1", "cleanup.policy": "compact"})
    _fill(log, 4)
    log.update_high_watermark(log.log_end_offset)
    assert log.delete_old_segments(NOW + 100 * HOUR) == 0
    log.close()


def test_retention_never_deletes_the_active_segment(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"segment.bytes": "200", "retention.ms": "0", "retention.bytes": "0",
                              "file.delete.delay.ms": "0"})
    _fill(log, 4)
    log.update_high_watermark(log.log_end_offset)
    active = log.active_segment
    assert log.delete_old_segments(NOW + 100 * HOUR) == 3
    assert log.segments == [active] and log.log_start_offset == active.base_offset == 3
    assert log.delete_old_segments(NOW + 200 * HOUR) == 0
    assert [r[0] for r in read_all(log)] == [3]
    log.close()


def test_log_start_offset_from_retention_and_delete_records_is_checkpointed(tmp_path: Path) -> None:
    from broker.log import LogManager
    from broker.log.checkpoints import read_offset_checkpoint

    manager = LogManager([tmp_path], now_ms=NOW)
    log = manager.get_or_create_log("r", 0, config={"segment.bytes": "200", "retention.ms": str(3 * HOUR)}, now_ms=NOW)
    _fill(log, 6)
    log.update_high_watermark(log.log_end_offset)
    assert manager.run_retention(NOW + 5 * HOUR + HOUR // 2) == 3
    assert log.delete_records_before(4) == 4
    manager.checkpoint()
    assert read_offset_checkpoint(tmp_path.resolve() / "log-start-offset-checkpoint") == {("r", 0): 4}
    manager.close()
    reopened = LogManager([tmp_path], now_ms=NOW)
    again = reopened.get_log("r", 0)
    assert again is not None and again.log_start_offset == 4
    assert [r[0] for r in read_all(again)] == [4, 5]
    reopened.close()


def test_the_log_owns_its_segment_list(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"segment.bytes": "200"})
    _fill(log, 3)
    listed = log.segments
    listed.clear()
    assert len(log.segments) == 3  # callers get a copy
    assert log.inactive_segments == log.segments[:-1]
    assert log.holds(log.inactive_segments) and not log.holds(listed + [object()])  # type: ignore[list-item]
    log.close()
