"""An I/O error in a log takes its whole dir offline: KAFKA_STORAGE_ERROR from then on,
listeners told once, new logs go to the dirs still online, shutdown skips the failed dir."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from broker.log import LogManager
from broker.log.checkpoints import CLEAN_SHUTDOWN_MARKER
from broker.log.errors import KafkaStorageError
from tests.unit.broker.log.helpers import NOW, batch


def fail_writes(log, monkeypatch) -> None:
    """The next write of `log`'s active segment hits a full disk."""
    segment = log.active_segment

    def full(data) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(segment, "_write_all", full)


def test_a_failed_append_takes_the_dir_offline(tmp_path: Path, monkeypatch) -> None:
    manager = LogManager([tmp_path / "a", tmp_path / "b"])
    told: list[Path] = []
    manager.failures.subscribe(told.append)
    # New logs go to the least loaded dir: a, b, then a again.
    first = manager.get_or_create_log("t", 0, now_ms=NOW)
    other = manager.get_or_create_log("t", 1, now_ms=NOW)
    neighbour = manager.get_or_create_log("t", 2, now_ms=NOW)
    assert first.directory.parent == neighbour.directory.parent != other.directory.parent
    first.append_as_leader(batch([b"kept"]), 0, NOW)
    fail_writes(first, monkeypatch)
    with pytest.raises(KafkaStorageError, match="No space left"):
        first.append_as_leader(batch([b"lost"]), 0, NOW)
    failed = first.directory.parent
    assert told == [failed] and manager.failures.offline == [failed]
    assert manager.online_dirs == [other.directory.parent]
    # Every log in the failed dir is refused, for reads too; the other dir works on.
    for log in (first, neighbour):
        with pytest.raises(KafkaStorageError, match="offline"):
            log.append_as_leader(batch([b"x"]), 0, NOW)
        with pytest.raises(KafkaStorageError, match="offline"):
            log.read(0, 1 << 20)
    assert first.log_end_offset == 1
    other.append_as_leader(batch([b"fine"]), 0, NOW)
    assert manager.get_or_create_log("t", 3, now_ms=NOW).directory.parent == \
        other.directory.parent
    assert manager.logs() == [other, manager.get_log("t", 3)]
    manager.close()
    assert not (failed / CLEAN_SHUTDOWN_MARKER).exists()
    assert (other.directory.parent / CLEAN_SHUTDOWN_MARKER).exists()


def test_no_new_log_without_an_online_dir(tmp_path: Path, monkeypatch) -> None:
    manager = LogManager([tmp_path / "a"])
    log = manager.get_or_create_log("t", 0, now_ms=NOW)
    fail_writes(log, monkeypatch)
    with pytest.raises(KafkaStorageError):
        log.append_as_leader(batch([b"x"]), 0, NOW)
    assert manager.online_dirs == []
    with pytest.raises(KafkaStorageError, match="every log directory is offline"):
        manager.get_or_create_log("t", 1, now_ms=NOW)
    manager.close()


def test_a_failure_is_reported_once(tmp_path: Path, monkeypatch) -> None:
    manager = LogManager([tmp_path / "a"])
    told: list[Path] = []
    manager.failures.subscribe(told.append)
    log = manager.get_or_create_log("t", 0, now_ms=NOW)
    fail_writes(log, monkeypatch)
    for _ in range(3):
        with pytest.raises(KafkaStorageError):
            log.append_as_leader(batch([b"x"]), 0, NOW)
    assert len(told) == 1
    manager.close()
