import shutil
from pathlib import Path

import pytest
import trio

from broker.log import LogManager, cleaner
from broker.log.cleaner import clean_log, clean_log_steps
from broker.log.config import LogConfig

from tests.unit.broker.log.helpers import NOW, batch, open_log, read_all

HOUR = 3_600_000
COMPACT = {"cleanup.policy": "compact", "segment.bytes": "300", "delete.retention.ms": str(HOUR)}


def _put(log, key: bytes, value: bytes | None, ts: int = NOW) -> int:  # type: ignore[no-untyped-def]
    return log.append_as_leader(batch([value], keys=[key], timestamp=ts), 0, ts).first_offset


def _latest(records: list) -> dict:  # type: ignore[type-arg]
    latest = {}
    for offset, key, value in records:
        latest[key] = (offset, value)
    return latest


def test_compaction_keeps_last_value_per_key_and_offsets(tmp_path: Path) -> None:
    log = open_log(tmp_path, COMPACT)
    for n in range(30):
        _put(log, b"k%d" % (n % 4), b"v%d" % n + b"x" * 40)
    log.update_high_watermark(log.log_end_offset)
    before = read_all(log)
    active_before = log.active_segment.base_offset
    stats = clean_log(log, NOW)
    assert stats is not None and stats.records_removed > 0
    after = read_all(log)
    cleaned_end = active_before
    for offset, key, value in after:
        if offset < cleaned_end:
            assert _latest(before)[key][0] >= offset
            assert _latest([r for r in before if r[0] < cleaned_end])[key] == (offset, value)
    assert [r for r in after if r[0] >= cleaned_end] == [r for r in before if r[0] >= cleaned_end]
    assert _latest(after) == _latest(before)
    assert log.log_end_offset == 30
    assert len(after) < len(before)
    assert not list(log.directory.glob("*.cleaned")) and not list(log.directory.glob("*.swap"))
    log.close()
    reopened = open_log(tmp_path, COMPACT)
    assert read_all(reopened) == after
    reopened.close()


def test_dirty_ratio_and_min_compaction_lag_gate_cleaning(tmp_path: Path) -> None:
    log = open_log(tmp_path, {**COMPACT, "min.cleanable.dirty.ratio": "0.99"})
    for n in range(10):
        _put(log, b"k%d" % n, b"x" * 60)
    log.update_high_watermark(log.log_end_offset)
    assert clean_log(log, NOW) is not None  # all dirty: ratio 1.0
    assert clean_log(log, NOW) is None  # nothing new
    log.close()
    lagged = open_log(tmp_path / "lag", {**COMPACT, "min.compaction.lag.ms": str(HOUR)})
    for n in range(10):
        _put(lagged, b"same", b"x" * 60)
    lagged.update_high_watermark(lagged.log_end_offset)
    assert clean_log(lagged, NOW + 10) is None
    assert clean_log(lagged, NOW + 2 * HOUR) is not None
    lagged.close()


def test_tombstones_survive_delete_retention_then_go(tmp_path: Path) -> None:
    log = open_log(tmp_path, COMPACT)
    _put(log, b"gone", b"x" * 60)
    _put(log, b"gone", None)
    for n in range(8):
        _put(log, b"k%d" % n, b"y" * 60)
    log.update_high_watermark(log.log_end_offset)
    clean_log(log, NOW)
    keys = [(k, v) for _, k, v in read_all(log)]
    assert (b"gone", None) in keys and (b"gone", b"x" * 60) not in keys
    clean_log(log, NOW + HOUR // 2, force=True)
    assert (b"gone", None) in [(k, v) for _, k, v in read_all(log)]
    clean_log(log, NOW + 2 * HOUR, force=True)
    assert b"gone" not in [k for _, k, _ in read_all(log)]
    log.close()


def test_active_segment_is_never_cleaned(tmp_path: Path) -> None:
    log = open_log(tmp_path, {**COMPACT, "segment.bytes": "100000"})
    for n in range(10):
        _put(log, b"same", b"v%d" % n)
    log.update_high_watermark(log.log_end_offset)
    assert clean_log(log, NOW, force=True) is None
    assert len(read_all(log)) == 10
    log.close()


def test_interrupted_swap_is_completed_on_open(tmp_path: Path) -> None:
    log = open_log(tmp_path, COMPACT)
    for n in range(20):
        _put(log, b"k%d" % (n % 2), b"v%d" % n + b"x" * 40)
    log.update_high_watermark(log.log_end_offset)
    directory = log.directory
    first = directory / "00000000000000000000.log"
    saved = tmp_path / "old-first.log"
    shutil.copy(first, saved)
    clean_log(log, NOW)
    expected = read_all(log)
    log.close()
    # Crash after the cleaned file became .swap but before the old segment was replaced.
    first.rename(directory / "00000000000000000000.log.swap")
    shutil.copy(saved, first)
    (directory / "00000000000000000000.log.cleaned").write_bytes(b"partial")
    reopened = open_log(tmp_path, COMPACT, clean_shutdown=False)
    assert read_all(reopened) == expected
    assert not list(directory.glob("*.swap")) and not list(directory.glob("*.cleaned"))
    reopened.close()


def test_a_dirty_ratio_below_the_minimum_waits(tmp_path: Path) -> None:
    log = open_log(tmp_path, {**COMPACT, "min.cleanable.dirty.ratio": "0.6"})
    for n in range(20):
        _put(log, b"k%d" % n, b"x" * 60)
    log.update_high_watermark(log.log_end_offset)
    assert clean_log(log, NOW) is not None
    clean_end = log.first_dirty_offset
    for n in range(4):  # a little new data: dirty / (clean + dirty) stays under 0.6
        _put(log, b"k%d" % n, b"z" * 60)
    log.update_high_watermark(log.log_end_offset)
    assert log.active_segment.base_offset > clean_end
    assert clean_log(log, NOW) is None
    for n in range(4, 40):
        _put(log, b"k%d" % (n % 20), b"z" * 60)
    log.update_high_watermark(log.log_end_offset)
    stats = clean_log(log, NOW)
    assert stats is not None and stats.first_dirty_offset == clean_end
    assert {k: v for _, k, v in read_all(log)} == {b"k%d" % n: b"z" * 60 for n in range(20)}
    log.close()


def _stepped_log(directory: Path):  # type: ignore[no-untyped-def]
    log = open_log(directory, COMPACT)
    for n in range(30):
        _put(log, b"k%d" % (n % 4), b"v%d" % n + b"x" * 40)
    log.update_high_watermark(log.log_end_offset)
    return log


def test_a_stepped_pass_does_what_a_whole_pass_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cleaner, "STEP_BYTES", 200)
    whole, stepped = _stepped_log(tmp_path / "whole"), _stepped_log(tmp_path / "stepped")
    expected = clean_log(whole, NOW)
    steps = clean_log_steps(stepped, NOW)
    count = 0
    with pytest.raises(StopIteration) as done:
        while True:
            next(steps)
            count += 1
    assert count > 10 and done.value.value == expected
    assert read_all(stepped) == read_all(whole)
    assert stepped.first_dirty_offset == whole.first_dirty_offset
    whole.close()
    stepped.close()


@pytest.mark.parametrize("change", ["retention", "truncation", "policy"])
def test_a_stepped_pass_stops_when_the_log_changes_under_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str,
) -> None:
    monkeypatch.setattr(cleaner, "STEP_BYTES", 200)
    log = _stepped_log(tmp_path)
    first_dirty = log.first_dirty_offset
    steps = clean_log_steps(log, NOW)
    for _ in range(3):  # part of the way through the offset map
        next(steps)
    if change == "retention":
        log.delete_records_before(log.segments[2].base_offset)
        assert log.delete_old_segments(NOW) == 2
    elif change == "truncation":
        log.truncate_to(log.segments[3].base_offset + 1)
    else:
        log.update_config(LogConfig.from_overrides({**COMPACT, "cleanup.policy": "delete"}))
    expected = read_all(log)
    with pytest.raises(StopIteration) as done:
        next(steps)
    assert done.value.value is None
    assert read_all(log) == expected and log.first_dirty_offset >= first_dirty
    assert not list(log.directory.glob("*.cleaned"))
    if change != "policy":
        assert clean_log(log, NOW) is not None  # the next pass does the work
    log.close()


async def test_the_yielding_cleaner_lets_appends_run_and_can_be_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cleaner, "STEP_BYTES", 200)
    manager = LogManager([tmp_path], now_ms=NOW)
    log = manager.get_or_create_log("c", 0, config=COMPACT, now_ms=NOW)
    for n in range(30):
        _put(log, b"k%d" % (n % 4), b"v%d" % n + b"x" * 40)
    log.update_high_watermark(log.log_end_offset)
    appended_during_pass: list[int] = []

    async def cleaner_task() -> None:
        assert await manager.run_cleaner(NOW) == 1

    async def producer_task(cleaning: trio.Nursery) -> None:
        while cleaning.child_tasks:
            appended_during_pass.append(_put(log, b"new", b"n"))
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as outer:
        async with trio.open_nursery() as cleaning:
            cleaning.start_soon(cleaner_task)
            outer.start_soon(producer_task, cleaning)
    assert len(appended_during_pass) > 5
    records = read_all(log)
    assert [r[0] for r in records if r[1] == b"new"][-1] == appended_during_pass[-1]
    assert {k for _, k, _ in records} == {b"k0", b"k1", b"k2", b"k3", b"new"}

    for n in range(30):
        _put(log, b"k%d" % (n % 4), b"w%d" % n + b"x" * 40)
    log.update_high_watermark(log.log_end_offset)
    before = read_all(log)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(manager.run_cleaner, NOW)
        with trio.fail_after(5):
            while not list(log.directory.glob("*.cleaned")):  # in the middle of rewriting
                await trio.lowlevel.checkpoint()
        nursery.cancel_scope.cancel()
    assert not list(log.directory.glob("*.cleaned"))
    assert {k: v for _, k, v in read_all(log)} == {k: v for _, k, v in before}
    assert log.first_dirty_offset < log.active_segment.base_offset  # still dirty
    manager.close()


def _force_clean_until_caught_up(log, map_capacity: int) -> list[int]:  # type: ignore[no-untyped-def]
    """Clean with ``map_capacity`` until the dirty section is gone; the end offset of each pass."""
    ends = []
    while log.first_dirty_offset < log.active_segment.base_offset:
        stats = clean_log(log, NOW, force=True, map_capacity=map_capacity)
        assert stats is not None
        ends.append(stats.end_offset)
        assert len(ends) < 100, "the passes make no progress"
    return ends


def test_a_full_key_map_cleans_up_to_where_it_filled_and_the_next_pass_goes_on(tmp_path: Path) -> None:
    small = open_log(tmp_path / "small", COMPACT)
    large = open_log(tmp_path / "large", COMPACT)
    for log in (small, large):
        for n in range(36):
            _put(log, b"k%d" % (n % 6), b"v%d" % n + b"x" * 40)
        log.update_high_watermark(log.log_end_offset)
    first = clean_log(small, NOW, force=True, map_capacity=3)
    assert first is not None
    # One record per batch: three batches fill the map, the fourth (offset 3) did not fit.
    assert first.end_offset == small.first_dirty_offset == 3
    ends = [first.end_offset, *_force_clean_until_caught_up(small, 3)]
    assert ends == sorted(ends) and len(set(ends)) == len(ends)
    _force_clean_until_caught_up(large, 1_000_000)
    assert read_all(small) == read_all(large)
    assert len(read_all(small)) < 36
    small.close()
    large.close()


def test_a_batch_with_more_keys_than_the_map_holds_still_gets_cleaned(tmp_path: Path) -> None:
    log = open_log(tmp_path, {**COMPACT, "segment.bytes": "600"})
    for n in range(8):
        log.append_as_leader(batch([b"a%d" % n, b"b%d" % n, b"c%d" % n], keys=[b"a", b"b", b"c"]), 0, NOW)
    log.update_high_watermark(log.log_end_offset)
    before = read_all(log)
    ends = _force_clean_until_caught_up(log, 1)
    assert ends[0] == 3  # the first batch went in whole although the map holds one key
    active_base = log.active_segment.base_offset
    cleaned = [(offset, key, value) for offset, key, value in read_all(log) if offset < active_base]
    assert sorted(_latest(cleaned).values()) == sorted(_latest([r for r in before if r[0] < active_base]).values())
    assert len(cleaned) == 3  # one record per key
    log.close()


def test_a_tombstone_past_a_full_map_is_kept_until_a_pass_maps_it(tmp_path: Path) -> None:
    log = open_log(tmp_path, {**COMPACT, "segment.bytes": "100000"})
    _put(log, b"K", b"value")
    for key in (b"a", b"b", b"c", b"d"):
        _put(log, key, b"v")
    _put(log, b"K", None)  # offset 5: deletes K
    log.roll(NOW)
    _put(log, b"z", b"active")
    log.update_high_watermark(log.log_end_offset)
    now = NOW
    ends = []
    while log.first_dirty_offset < log.active_segment.base_offset:
        stats = clean_log(log, now, force=True, map_capacity=2)
        assert stats is not None
        ends.append(stats.end_offset)
        now += 2 * HOUR  # past delete.retention.ms before every next pass
    assert ends[:2] == [2, 4]
    # Two more passes, long after any horizon: the deleted value never comes back.
    for _ in range(2):
        clean_log(log, now, force=True, map_capacity=2)
        now += 2 * HOUR
    assert (b"K", b"value") not in [(key, value) for _, key, value in read_all(log)]
    log.close()


# -- transactions ----------------------------------------------------------------------------

def _txn_put(log, pid: int, seq: int, key: bytes, value: bytes) -> int:  # type: ignore[no-untyped-def]
    from clients.records.batch import Record, encode_batch

    data = bytearray(encode_batch([Record(None, NOW, key, value)], producer_id=pid, producer_epoch=0,
                                  base_sequence=seq, is_transactional=True))
    return log.append_as_leader(data, 0, NOW).first_offset


def _more(log, tag: bytes) -> None:  # type: ignore[no-untyped-def]
    """Fresh dirty data, so that a later pass has something to clean."""
    for n in range(6):
        _put(log, tag + b"%d" % n, b"y" * 60)
    log.update_high_watermark(log.log_end_offset)


def _markers(log) -> list[tuple[int, int]]:  # type: ignore[no-untyped-def]
    """(offset, producer id) of every control batch in the log."""
    found = []
    for segment in log.segments:
        for _, header in segment.iter_headers(0):
            if header.is_control:
                found.append((header.base_offset, header.producer_id))
    return found


def test_compaction_removes_aborted_data_and_keeps_what_it_shadowed(tmp_path: Path) -> None:
    log = open_log(tmp_path, COMPACT)
    _put(log, b"k", b"committed" + b"x" * 40)                  # 0
    _txn_put(log, 7, 0, b"k", b"aborted" + b"x" * 40)          # 1
    abort = log.append_marker(False, 7, 0, 0, 0, NOW).first_offset   # 2
    for n in range(8):
        _put(log, b"other%d" % n, b"y" * 60)
    _txn_put(log, 7, 1, b"later", b"z" * 40)                   # the producer goes on: marker not its last
    log.append_marker(True, 7, 0, 0, 0, NOW)
    log.update_high_watermark(log.log_end_offset)
    assert log.aborted_transactions(0, log.log_end_offset)
    clean_log(log, NOW, force=True)
    values = {k: v for _, k, v in read_all(log)}
    # The aborted write neither survives nor evicts the committed value it shadowed.
    assert values[b"k"] == b"committed" + b"x" * 40
    assert all(v != b"aborted" + b"x" * 40 for _, _, v in read_all(log))
    # Its marker stays for now: data of its transaction was there when this pass started.
    assert (abort, 7) in _markers(log)
    # A second pass finds no data left: the marker gets a delete horizon, goes after it, and
    # so does its aborted-transaction index entry.
    _more(log, b"second")
    clean_log(log, NOW + 1, force=True)
    assert (abort, 7) in _markers(log)
    assert log.aborted_transactions(0, log.log_end_offset) == []
    _more(log, b"third")
    clean_log(log, NOW + 2, force=True)
    assert (abort, 7) in _markers(log)                         # its horizon has not passed
    _more(log, b"fourth")
    clean_log(log, NOW + HOUR + 2, force=True)
    assert (abort, 7) not in _markers(log)
    log.close()
    reopened = open_log(tmp_path, COMPACT)
    assert {k: v for _, k, v in read_all(reopened)}[b"k"] == b"committed" + b"x" * 40
    reopened.close()


def test_commit_markers_stay_while_their_data_does(tmp_path: Path) -> None:
    log = open_log(tmp_path, COMPACT)
    _txn_put(log, 5, 0, b"a", b"1" * 60)                       # 0
    commit = log.append_marker(True, 5, 0, 0, 0, NOW).first_offset   # 1
    _txn_put(log, 5, 1, b"b", b"2" * 60)                       # 2: keeps "a" live in its own txn
    log.append_marker(True, 5, 0, 0, 0, NOW)
    for n in range(8):
        _put(log, b"other%d" % n, b"y" * 60)
    log.update_high_watermark(log.log_end_offset)
    clean_log(log, NOW, force=True)
    _more(log, b"second")
    clean_log(log, NOW + HOUR + 2, force=True)
    assert (commit, 5) in _markers(log)                        # "a" is still there
    _put(log, b"a", b"newer" + b"y" * 60)                      # supersedes the transaction's data
    for n in range(8):
        _put(log, b"more%d" % n, b"y" * 60)
    log.update_high_watermark(log.log_end_offset)
    clean_log(log, NOW + HOUR + 3, force=True)                 # removes "a"
    assert b"1" * 60 not in [v for _, _, v in read_all(log)]
    assert (commit, 5) in _markers(log)
    _more(log, b"third")
    clean_log(log, NOW + 2 * HOUR, force=True)                 # no data left: a delete horizon
    assert (commit, 5) in _markers(log)
    _more(log, b"fourth")
    clean_log(log, NOW + 3 * HOUR + 1, force=True)
    assert (commit, 5) not in _markers(log)
    log.close()


def test_compaction_never_passes_the_last_stable_offset(tmp_path: Path) -> None:
    log = open_log(tmp_path, COMPACT)
    _put(log, b"k", b"v" * 60)
    _txn_put(log, 3, 0, b"open", b"o" * 60)                    # never ends
    for n in range(10):
        _put(log, b"k", b"w%d" % n + b"y" * 60)
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 1
    assert clean_log(log, NOW, force=True) is None
    assert len(read_all(log)) == 12
    log.close()


def test_a_committed_transaction_after_an_aborted_one_of_the_same_producer_supersedes(tmp_path: Path) -> None:
    log = open_log(tmp_path, COMPACT)
    _put(log, b"k", b"old" + b"x" * 60)                        # 0
    _txn_put(log, 7, 0, b"j", b"aborted" + b"x" * 40)          # 1
    log.append_marker(False, 7, 0, 0, 0, NOW)                  # 2
    _txn_put(log, 7, 1, b"k", b"new" + b"x" * 60)              # 3: committed, same producer
    log.append_marker(True, 7, 0, 0, 0, NOW)                   # 4
    for n in range(8):
        _put(log, b"other%d" % n, b"y" * 60)
    log.update_high_watermark(log.log_end_offset)
    clean_log(log, NOW, force=True)
    values = [(k, v) for _, k, v in read_all(log)]
    assert (b"k", b"new" + b"x" * 60) in values
    assert (b"k", b"old" + b"x" * 60) not in values
    log.close()
