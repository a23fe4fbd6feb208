"""Transactions in the log: open transactions and the LSO, markers, the aborted-transaction
index (its format, recovery, truncation, deletion) and producer state across restarts."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from broker.log import errors
from broker.log.partition_log import PartitionLog
from broker.log.results import UpperBound
from clients.records.batch import Record, encode_batch

from tests.unit.broker.log.helpers import NOW, batch, open_log

SMALL_SEGMENTS = {"segment.bytes": "600"}


def txn_batch(pid: int, seq: int, values: int = 1, *, epoch: int = 0, size: int = 1) -> bytearray:
    records = [Record(None, NOW, None, b"t" * size) for _ in range(values)]
    return bytearray(encode_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                  is_transactional=True))


def commit(log: PartitionLog, pid: int, *, epoch: int = 0, coordinator_epoch: int = 0) -> int:
    return log.append_marker(True, pid, epoch, coordinator_epoch, 0, NOW).first_offset


def abort(log: PartitionLog, pid: int, *, epoch: int = 0, coordinator_epoch: int = 0) -> int:
    return log.append_marker(False, pid, epoch, coordinator_epoch, 0, NOW).first_offset


def hw_to_end(log: PartitionLog) -> None:
    log.update_high_watermark(log.log_end_offset)


def aborted(log: PartitionLog, start: int = 0) -> list[tuple[int, int]]:
    return [(t.producer_id, t.first_offset) for t in log.aborted_transactions(start, log.log_end_offset)]


def test_an_open_transaction_holds_the_lso_at_its_first_offset(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch([b"plain"]), 0, NOW)                 # 0
    log.append_as_leader(txn_batch(7, 0, 2), 0, NOW)                # 1-2
    log.append_as_leader(batch([b"plain"]), 0, NOW)                 # 3
    hw_to_end(log)
    assert log.high_watermark == 4
    assert log.last_stable_offset == 1
    assert log.producer_state.ongoing == {7: 1}
    marker = commit(log, 7)
    assert marker == 4
    # The marker is not yet below the HW: a new leader might not have it.
    assert log.last_stable_offset == 1
    hw_to_end(log)
    assert log.last_stable_offset == log.high_watermark == 5
    assert aborted(log) == []


def test_interleaved_transactions_hold_the_lso_at_the_earliest(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(1, 0), 0, NOW)      # 0
    log.append_as_leader(txn_batch(2, 0), 0, NOW)      # 1
    log.append_as_leader(txn_batch(1, 1), 0, NOW)      # 2
    hw_to_end(log)
    assert log.last_stable_offset == 0
    commit(log, 1)                                      # 3
    hw_to_end(log)
    assert log.last_stable_offset == 1
    abort(log, 2)                                       # 4
    hw_to_end(log)
    assert log.last_stable_offset == 5
    # The abort's LSO-after is 5 (no other open transaction).
    entry = log.active_segment.txn_index.entries[0]
    assert (entry.producer_id, entry.first_offset, entry.last_offset, entry.last_stable_offset) == (2, 1, 4, 5)


def test_read_committed_reads_stop_at_the_lso(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch([b"a"]), 0, NOW)
    log.append_as_leader(txn_batch(3, 0), 0, NOW)
    hw_to_end(log)
    committed = log.read(0, 1 << 20, UpperBound.LSO)
    everything = log.read(0, 1 << 20, UpperBound.HW)
    assert committed.last_stable_offset == 1
    assert 0 < committed.size < everything.size


def test_abort_writes_kafkas_txnindex_entry(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(11, 0), 0, NOW)              # 0
    log.append_as_leader(txn_batch(12, 0), 0, NOW)              # 1
    abort(log, 11)                                              # 2: 12 still open
    files = list(log.directory.glob("*.txnindex"))
    assert [f.name for f in files] == ["00000000000000000000.txnindex"]
    raw = files[0].read_bytes()
    assert len(raw) == 34
    assert struct.unpack(">hqqqq", raw) == (0, 11, 0, 2, 1)
    assert aborted(log) == [(11, 0)]
    assert aborted(log, start=3) == []


def test_markers_check_producer_and_coordinator_epochs(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(5, 0, epoch=3), 0, NOW)
    commit(log, 5, epoch=3, coordinator_epoch=4)
    with pytest.raises(errors.InvalidProducerEpoch):
        abort(log, 5, epoch=2, coordinator_epoch=4)
    with pytest.raises(errors.TransactionCoordinatorFenced) as info:
        abort(log, 5, epoch=3, coordinator_epoch=3)
    assert info.value.error_code == 52
    assert log.producer_state.producers[5].coordinator_epoch == 4


def test_stale_epoch_and_non_transactional_writes_inside_a_transaction_are_refused(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(5, 0, epoch=2), 0, NOW)
    with pytest.raises(errors.InvalidProducerEpoch):
        log.append_as_leader(txn_batch(5, 1, epoch=1), 0, NOW)
    with pytest.raises(errors.InvalidTxnState) as info:
        log.append_as_leader(batch([b"x"], producer_id=5, producer_epoch=2, base_sequence=1), 0, NOW)
    assert info.value.error_code == 48
    assert log.log_end_offset == 1


def test_open_transaction_survives_a_clean_restart(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch([b"a"]), 0, NOW)
    log.append_as_leader(txn_batch(9, 0), 0, NOW)
    log.append_as_leader(txn_batch(10, 0), 0, NOW)
    abort(log, 10)
    log.close()
    reopened = open_log(tmp_path, high_watermark=4)
    assert reopened.producer_state.ongoing == {9: 1}
    assert reopened.producer_state.producers[10].coordinator_epoch == 0
    assert reopened.last_stable_offset == 1
    assert aborted(reopened) == [(10, 2)]
    commit(reopened, 9)
    hw_to_end(reopened)
    assert reopened.last_stable_offset == 5


def _crash_log(tmp_path: Path) -> list[tuple[int, int]]:
    """Several segments of transactions, some aborted, one left open; no clean close."""
    log = open_log(tmp_path, SMALL_SEGMENTS)
    for n in range(6):
        log.append_as_leader(txn_batch(100 + n, 0, size=150), 0, NOW)
        if n % 2:
            abort(log, 100 + n)
        elif n < 4:
            commit(log, 100 + n)
    assert len(log.segments) > 2
    expected = aborted(log)
    assert expected == [(101, 2), (103, 6), (105, 9)]
    for segment in log.segments:
        segment.flush()
    return expected


def test_txnindex_and_open_transactions_are_rebuilt_after_a_crash(tmp_path: Path) -> None:
    expected = _crash_log(tmp_path)
    directory = tmp_path / "topic-0"
    for path in directory.glob("*.txnindex"):
        path.unlink()
    for path in directory.glob("*.snapshot"):
        path.unlink()
    log = open_log(tmp_path, SMALL_SEGMENTS, clean_shutdown=False, recovery_point=0)
    assert aborted(log) == expected
    assert sorted(p.name for p in directory.glob("*.txnindex"))
    assert log.producer_state.ongoing == {104: 8}
    hw_to_end(log)
    assert log.last_stable_offset == 8


def test_truncation_drops_index_entries_and_reopens_the_transaction(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(1, 0), 0, NOW)     # 0
    abort(log, 1)                                     # 1
    log.append_as_leader(txn_batch(2, 0), 0, NOW)     # 2
    abort(log, 2)                                     # 3
    assert aborted(log) == [(1, 0), (2, 2)]
    log.truncate_to(3)
    assert aborted(log) == [(1, 0)]
    assert log.producer_state.ongoing == {2: 2}
    raw = next(log.directory.glob("*.txnindex")).read_bytes()
    assert len(raw) == 34
    log.truncate_to(1)
    assert aborted(log) == []
    assert not list(log.directory.glob("*.txnindex"))
    assert log.producer_state.ongoing == {1: 0}


def test_txnindex_goes_with_its_segment(tmp_path: Path) -> None:
    log = open_log(tmp_path, {**SMALL_SEGMENTS, "retention.ms": "1000", "file.delete.delay.ms": "0"})
    log.append_as_leader(txn_batch(1, 0, size=300), 0, NOW)
    abort(log, 1)
    log.append_as_leader(batch([b"x" * 300]), 0, NOW)
    log.append_as_leader(batch([b"x" * 300]), 0, NOW)
    hw_to_end(log)
    first = log.segments[0]
    assert first.txn_index.path.exists()
    log.delete_old_segments(NOW + 10_000)
    log.delete_pending_files(NOW + 10_000)
    assert not first.txn_index.path.exists()
    assert not list(log.directory.glob("00000000000000000000.*"))


def test_follower_appends_track_transactions_and_index_aborts(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "leader")
    leader.append_as_leader(txn_batch(4, 0), 0, NOW)
    leader.append_as_leader(txn_batch(6, 0), 0, NOW)
    abort(leader, 4)
    data = leader.read_bytes(0, 1 << 20, UpperBound.LEO)
    follower = open_log(tmp_path / "follower")
    follower.append_as_follower(data, NOW)
    assert aborted(follower) == [(4, 0)]
    assert follower.producer_state.ongoing == {6: 1}


def test_txnindex_of_an_interrupted_compaction_swap_is_rebuilt(tmp_path: Path) -> None:
    log = open_log(tmp_path, SMALL_SEGMENTS)
    log.append_as_leader(txn_batch(1, 0, size=300), 0, NOW)
    abort(log, 1)
    log.append_as_leader(batch([b"x" * 400]), 0, NOW)
    log.close()
    directory = tmp_path / "topic-0"
    index = directory / "00000000000000000000.txnindex"
    # Stopped between renaming the cleaned segment's .log.swap and its .txnindex.swap.
    index.rename(directory / "00000000000000000000.txnindex.swap")
    (directory / "00000000000000000000.log").rename(directory / "00000000000000000000.log.swap")
    reopened = open_log(tmp_path, SMALL_SEGMENTS)
    assert aborted(reopened) == [(1, 0)]
    assert index.exists()
    assert not list(directory.glob("*.swap"))
    reopened.close()


def test_a_read_committed_read_bounds_its_aborted_transactions(tmp_path: Path) -> None:
    log = open_log(tmp_path, SMALL_SEGMENTS)
    for pid in (1, 2, 3):
        log.append_as_leader(txn_batch(pid, 0, size=250), 0, NOW)
        abort(log, pid)
    hw_to_end(log)
    assert len(log.segments) >= 3
    first = log.read(0, 1, UpperBound.LSO)            # only the first batch
    assert 0 < first.upper_offset <= log.segments[1].base_offset
    assert [t.producer_id for t in log.aborted_transactions(0, first.upper_offset)] == [1]
    whole = log.read(0, 1 << 20, UpperBound.LSO)      # one segment's worth
    assert whole.upper_offset == log.segments[1].base_offset
    later = log.read(log.segments[1].base_offset, 1 << 20, UpperBound.LSO)
    assert [t.producer_id for t in log.aborted_transactions(later.first_offset, later.upper_offset)] == [2]
    assert log.read(0, 1 << 20, UpperBound.HW).upper_offset == -1


def test_snapshots_of_the_previous_format_still_load(tmp_path: Path) -> None:
    import msgpack

    from clients.records.header import crc32c

    log = open_log(tmp_path)
    log.append_as_leader(batch([b"x"], producer_id=4, producer_epoch=1, base_sequence=0), 0, NOW)
    log.close()
    (snapshot,) = log.directory.glob("*.snapshot")
    _, _, payload = msgpack.unpackb(snapshot.read_bytes())
    old = msgpack.packb([entry[:4] for entry in msgpack.unpackb(payload)])  # no transaction fields
    snapshot.write_bytes(msgpack.packb([1, crc32c(old), old]))
    reopened = open_log(tmp_path)
    entry = reopened.producer_state.producers[4]
    assert (entry.epoch, entry.last_seq, entry.current_txn_first_offset) == (1, 0, -1)
    assert reopened.append_as_leader(batch([b"x"], producer_id=4, producer_epoch=1, base_sequence=0),
                                     0, NOW).duplicate
    reopened.close()
