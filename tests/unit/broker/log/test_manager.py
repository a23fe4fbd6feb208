import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from broker.log import LogManager, read_meta_properties, write_meta_properties
from broker.log.checkpoints import read_offset_checkpoint, topic_id_from_string, topic_id_to_string
from broker.log.errors import LogDirLockedError

from tests.unit.broker.log.helpers import NOW, batch, read_all


def test_second_process_cannot_open_a_locked_dir(tmp_path: Path, repo_root: Path) -> None:
    manager = LogManager([tmp_path / "logs"])
    code = (
        "import sys\n"
        "from broker.log import LogManager\n"
        "from broker.log.errors import LogDirLockedError\n"
        "try:\n"
        f"    LogManager([{str(tmp_path / 'logs')!r}])\n"
        "except LogDirLockedError as exc:\n"
        "    print(exc); sys.exit(3)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=repo_root, timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert "locked by another process" in proc.stdout
    manager.close()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=repo_root, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_same_process_second_manager_fails_too(tmp_path: Path) -> None:
    manager = LogManager([tmp_path / "a", tmp_path / "b"])
    with pytest.raises(LogDirLockedError):
        LogManager([tmp_path / "c", tmp_path / "b"])
    # The failed attempt released what it had locked.
    LogManager([tmp_path / "c"]).close()
    manager.close()


def test_logs_checkpoints_and_clean_shutdown(tmp_path: Path) -> None:
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    topic_id = uuid.uuid4()
    manager = LogManager(dirs, {"log.segment.bytes": "300"}, now_ms=NOW)
    logs = [manager.get_or_create_log("orders", p, topic_id, now_ms=NOW) for p in range(4)]
    assert {log.directory.parent for log in logs} == {d.resolve() for d in dirs}
    assert manager.get_or_create_log("orders", 0) is logs[0]
    for log in logs:
        for _ in range(3):
            log.append_as_leader(batch([b"x" * 100]), 1, NOW)
        log.update_high_watermark(2)
    manager.checkpoint()
    log_dir = logs[0].directory.parent
    assert read_offset_checkpoint(log_dir / "replication-offset-checkpoint")[("orders", 0)] == 2
    assert (logs[0].directory / "partition.metadata").read_text() == (
        f"version: 0\ntopic_id: {topic_id_to_string(topic_id)}")
    manager.close()
    assert all((d / ".kafka_cleanshutdown").exists() for d in dirs)
    reopened = LogManager(dirs, {"log.segment.bytes": "300"}, now_ms=NOW)
    assert not any((d / ".kafka_cleanshutdown").exists() for d in dirs)
    assert sorted((log.topic, log.partition) for log in reopened.logs()) == [("orders", p) for p in range(4)]
    log = reopened.get_log("orders", 0)
    assert log is not None and log.log_end_offset == 3 and log.high_watermark == 2
    assert log.topic_id == topic_id and log.config.segment_bytes == 300
    assert reopened.delete_log("orders", 0)
    assert not log.directory.exists() and reopened.get_log("orders", 0) is None
    assert reopened.run_retention(NOW) == 0
    assert reopened.flush_due(NOW) == 0
    reopened.close()


def test_unclean_manager_restart_recovers(tmp_path: Path) -> None:
    manager = LogManager([tmp_path], now_ms=NOW)
    log = manager.get_or_create_log("t", 0, now_ms=NOW)
    for n in range(5):
        log.append_as_leader(batch([b"%d" % n]), 0, NOW)
    expected = read_all(log)
    for d in manager._dirs:  # simulate a crash: drop the lock without closing anything
        d.release()
    again = LogManager([tmp_path], now_ms=NOW)
    assert read_all(again.get_log("t", 0)) == expected  # type: ignore[arg-type]
    again.close()


def test_meta_properties_round_trip(tmp_path: Path) -> None:
    assert read_meta_properties(tmp_path) is None
    write_meta_properties(tmp_path, {"node.id": 3, "cluster.id": "abc", "directory.id": "xyz"})
    props = read_meta_properties(tmp_path)
    assert props == {"node.id": "3", "cluster.id": "abc", "directory.id": "xyz", "version": "1"}


def test_topic_id_text_form() -> None:
    topic_id = uuid.uuid4()
    text = topic_id_to_string(topic_id)
    assert len(text) == 22 and "=" not in text
    assert topic_id_from_string(text) == topic_id


async def test_cleaner_runs_from_the_manager(tmp_path: Path) -> None:
    manager = LogManager([tmp_path], now_ms=NOW)
    log = manager.get_or_create_log("c", 0, config={"cleanup.policy": "compact", "segment.bytes": "200"}, now_ms=NOW)
    for n in range(12):
        log.append_as_leader(batch([b"v" * 50], keys=[b"k"]), 0, NOW)
    log.update_high_watermark(log.log_end_offset)
    assert await manager.run_cleaner(NOW) == 1
    assert len(read_all(log)) < 12
    manager.close()
    assert read_offset_checkpoint(tmp_path.resolve() / "cleaner-offset-checkpoint")[("c", 0)] > 0


def test_quorum_directory_in_a_log_dir_is_not_a_partition(tmp_path) -> None:
    from broker.log import LogManager
    from metadata.topic_names import METADATA_DIR_NAME

    quorum_dir = tmp_path / METADATA_DIR_NAME
    quorum_dir.mkdir()
    (quorum_dir / "raft.snapshot.tmp").write_bytes(b"in progress")
    manager = LogManager([tmp_path])
    try:
        assert manager.logs() == []
    finally:
        manager.close()
    assert (quorum_dir / "raft.snapshot.tmp").read_bytes() == b"in progress"
