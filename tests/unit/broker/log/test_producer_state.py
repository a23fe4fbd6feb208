from pathlib import Path

import pytest

from broker.log import errors

from tests.unit.broker.log.helpers import NOW, batch, open_log


def _idem(seq: int, epoch: int = 0, values: int = 1, pid: int = 42) -> bytearray:
    return batch([b"v"] * values, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def test_duplicate_returns_original_offsets_without_appending(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch([b"other"]), 0, NOW)
    first = log.append_as_leader(_idem(0, values=3), 0, NOW)
    log.append_as_leader(_idem(3), 0, NOW)
    retry = log.append_as_leader(_idem(0, values=3), 0, NOW)
    assert retry.duplicate
    assert (retry.first_offset, retry.last_offset) == (first.first_offset, first.last_offset) == (1, 3)
    assert log.log_end_offset == 5
    log.close()


def test_sequence_gap_is_out_of_order(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(_idem(0), 0, NOW)
    with pytest.raises(errors.OutOfOrderSequence) as info:
        log.append_as_leader(_idem(2), 0, NOW)
    assert info.value.error_code == 45
    assert log.log_end_offset == 1


def test_old_epoch_is_fenced_and_new_epoch_starts_at_zero(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(_idem(0, epoch=3), 0, NOW)
    with pytest.raises(errors.InvalidProducerEpoch) as info:
        log.append_as_leader(_idem(1, epoch=2), 0, NOW)
    assert info.value.error_code == 47
    with pytest.raises(errors.OutOfOrderSequence):
        log.append_as_leader(_idem(5, epoch=4), 0, NOW)
    assert log.append_as_leader(_idem(0, epoch=4), 0, NOW).first_offset == 1
    assert errors.DuplicateSequence("x").error_code == 46


def test_only_the_last_five_batches_are_remembered(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for seq in range(7):
        log.append_as_leader(_idem(seq), 0, NOW)
    assert log.append_as_leader(_idem(2), 0, NOW).duplicate
    with pytest.raises(errors.OutOfOrderSequence):
        log.append_as_leader(_idem(1), 0, NOW)


def test_snapshot_on_roll_and_rebuild_on_reopen(tmp_path: Path) -> None:
    overrides = {"segment.bytes": "400"}
    log = open_log(tmp_path, overrides)
    for seq in range(6):
        log.append_as_leader(batch([b"x" * 120], producer_id=9, producer_epoch=1, base_sequence=seq), 0, NOW)
    snapshots = sorted(p.name for p in log.directory.glob("*.snapshot"))
    assert snapshots, "a roll writes a producer snapshot"
    log.close()
    reopened = open_log(tmp_path, overrides)
    assert reopened.append_as_leader(
        batch([b"x" * 120], producer_id=9, producer_epoch=1, base_sequence=5), 0, NOW).duplicate
    with pytest.raises(errors.OutOfOrderSequence):
        reopened.append_as_leader(batch([b"x"], producer_id=9, producer_epoch=1, base_sequence=8), 0, NOW)
    # Without snapshots the state is rebuilt from batch headers alone.
    reopened.close()
    for path in reopened.directory.glob("*.snapshot"):
        path.unlink()
    rebuilt = open_log(tmp_path, overrides)
    assert rebuilt.append_as_leader(
        batch([b"x" * 120], producer_id=9, producer_epoch=1, base_sequence=5), 0, NOW).duplicate
    rebuilt.close()


def test_truncation_rewinds_producer_state(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for seq in range(4):
        log.append_as_leader(_idem(seq), 0, NOW)
    log.truncate_to(2)
    assert log.append_as_leader(_idem(2), 0, NOW).first_offset == 2
    log.close()


def test_each_roll_snapshots_producer_state_at_the_new_segment_base(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"segment.bytes": "400"})
    for seq in range(9):
        log.append_as_leader(batch([b"x" * 120], producer_id=9, producer_epoch=1, base_sequence=seq), 0, NOW)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) >= 3
    snapshots = sorted(int(p.name.split(".")[0]) for p in log.directory.glob("*.snapshot"))
    assert snapshots == bases[1:]
    log.close()
