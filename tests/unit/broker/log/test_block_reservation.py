"""Blocks reserved ahead of the active segment: invisible to readers, freed on roll, close
and recovery, whole segments with ``preallocate``, and appends that go on without them."""

import os
from pathlib import Path

import pytest

from broker.log import block_reservation
from broker.log.block_reservation import LARGEST_CHUNK, BlockReservation, reserve

from tests.unit.broker.log.helpers import NOW, batch, open_log, read_all

MIB = 1024 * 1024
BLOCK = 4096


@pytest.fixture(autouse=True)
def _file_system_reserves(tmp_path: Path) -> None:
    probe = tmp_path / "probe"
    fd = os.open(probe, os.O_RDWR | os.O_CREAT)
    try:
        supported = reserve(fd, 0, BLOCK)
    finally:
        os.close(fd)
        probe.unlink()
    if not supported:
        pytest.skip("this file system cannot reserve blocks (fallocate)")


def _allocated(path: Path) -> int:
    return os.stat(path).st_blocks * 512


def _just_the_data(path: Path) -> bool:
    """Allocated space is the file's size rounded up to whole blocks, and no more."""
    size = os.stat(path).st_size
    return _allocated(path) <= -(-size // BLOCK) * BLOCK


def test_reserved_blocks_lie_past_the_size_readers_see(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for _ in range(9):  # 9 batches of 3070 bytes: the reservation made at 8 reaches 16
        log.append_as_leader(batch([b"x" * 3000]), 0, NOW)
    path = log.active_segment.log_path
    size = os.stat(path).st_size
    assert size == log.active_segment.size
    assert _allocated(path) > -(-size // BLOCK) * BLOCK
    # Never more unused space than data.
    assert _allocated(path) <= 2 * size + BLOCK
    assert [r[0] for r in read_all(log)] == list(range(9))
    log.close()


def test_each_reservation_holds_as_much_again_as_the_file_up_to_the_largest(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT)
    try:
        blocks = BlockReservation(fd)
        ends = []
        size = 0
        while size < 60 * MIB:
            blocks.ahead_of(size, MIB, 1 << 30)
            if not ends or blocks.end != ends[-1]:
                ends.append(blocks.end)
            size += MIB
        assert ends[:6] == [MIB, 2 * MIB, 4 * MIB, 8 * MIB, 16 * MIB, 32 * MIB]
        assert all(b - a == LARGEST_CHUNK for a, b in zip(ends[5:], ends[6:]))
        assert os.fstat(fd).st_size == 0  # a reservation never changes the size
    finally:
        os.close(fd)


def test_no_reservation_passes_the_segment_size_cap(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"segment.bytes": str(64 * 1024)})
    log.append_as_leader(batch([b"x" * 100]), 0, NOW)
    assert _allocated(log.active_segment.log_path) <= 64 * 1024
    log.close()


def test_roll_and_close_give_the_reserved_blocks_back(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"segment.bytes": str(4 * BLOCK)})
    for _ in range(40):
        log.append_as_leader(batch([b"y" * 1000]), 0, NOW)
    assert len(log.segments) > 2
    for segment in log.segments[:-1]:
        assert _just_the_data(segment.log_path), segment.log_path
    active = log.active_segment.log_path
    assert not _just_the_data(active)
    log.close()
    assert _just_the_data(active)


def test_recovery_frees_blocks_a_crash_left_reserved(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for n in range(5):
        log.append_as_leader(batch([b"z%d" % n + b"." * 3000]), 0, NOW)
    path = log.active_segment.log_path
    assert not _just_the_data(path)
    # A crash: no close, no clean-shutdown marker; the reserved blocks stay allocated, and
    # recovery rescans the segment from the recovery point.
    reopened = open_log(tmp_path, clean_shutdown=False, recovery_point=0)
    assert [r[2] for r in read_all(reopened)] == [b"z%d" % n + b"." * 3000 for n in range(5)]
    assert _just_the_data(path)
    reopened.close()
    log.close()


def test_truncation_drops_the_reservation_and_appends_reserve_again(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for n in range(4):
        log.append_as_leader(batch([b"t%d" % n]), 0, NOW)
    log.truncate_to(2)
    path = log.active_segment.log_path
    assert _just_the_data(path)
    for _ in range(3):
        log.append_as_leader(batch([b"again" * 600]), 0, NOW)
    assert not _just_the_data(path)
    assert [r[2] for r in read_all(log)] == [b"t0", b"t1"] + [b"again" * 600] * 3
    log.close()


def test_preallocate_reserves_the_whole_segment(tmp_path: Path) -> None:
    log = open_log(tmp_path, {"preallocate": "true", "segment.bytes": str(8 * MIB)})
    log.append_as_leader(batch([b"p"]), 0, NOW)
    path = log.active_segment.log_path
    assert _allocated(path) >= 8 * MIB
    assert os.stat(path).st_size == log.active_segment.size
    log.close()
    assert _just_the_data(path)


def test_appends_go_on_where_blocks_cannot_be_reserved(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    try:
        blocks = BlockReservation(write_end)
        blocks.ahead_of(0, 100, 1 << 30)  # a pipe refuses fallocate
        assert blocks.end == 0
        os.write(write_end, b"still writable")
        assert os.read(read_end, 100) == b"still writable"
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_refused_reservation_gives_back_what_it_did_allocate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As ext4 does on ENOSPC: part of the range is allocated, and the call still fails.
    def partly(fd: int, offset: int, length: int) -> bool:
        reserve(fd, offset, length // 2)
        return False

    monkeypatch.setattr(block_reservation, "reserve", partly)
    log = open_log(tmp_path, {"preallocate": "true", "segment.bytes": str(8 * MIB)})
    log.append_as_leader(batch([b"q" * 100]), 0, NOW)
    assert _just_the_data(log.active_segment.log_path)
    log.append_as_leader(batch([b"r" * 100]), 0, NOW)  # no second try, and appends go on
    assert [r[2] for r in read_all(log)] == [b"q" * 100, b"r" * 100]
    log.close()
