"""Descriptors per partition, and running out of them: a partition keeps one descriptor open
(its active segment's log; the indexes are mapped and their files closed), and near the
open-files limit a new log is refused alone, with its directory kept online and a share of
the limit kept for connections.
Each case runs in a child process with a low open-files limit, so this process keeps its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.broker.log.helpers import batch

pytest.importorskip("resource")

CHILD = '''
import os, resource, sys
from broker.log.errors import KafkaStorageError
from broker.log.manager import LogManager

def open_fds():
    return len(os.listdir("/proc/self/fd"))

manager = LogManager([sys.argv[1]])
base = open_fds()
for p in range(50):
    manager.get_or_create_log("many", p)
print("per-partition", (open_fds() - base) / 50)
limit = open_fds() + 200
resource.setrlimit(resource.RLIMIT_NOFILE, (limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
refused = 0
for p in range(300):
    try:
        manager.get_or_create_log("more", p)
    except KafkaStorageError as exc:
        assert "keeps the rest of its open-files limit" in str(exc), exc
        refused += 1
print("refused", refused)
print("offline", len(manager.failures.offline))
from broker.open_files import descriptors_in_use
print("left", limit - descriptors_in_use())
log = manager.get_log("many", 0)
log.append_as_leader(bytearray(open(sys.argv[2], "rb").read()), 0, 1_700_000_000_000)
print("appended", log.log_end_offset)
'''


def test_a_partition_keeps_one_descriptor_and_running_out_refuses_only_new_logs(
        tmp_path: Path) -> None:
    records = tmp_path / "batch.bin"
    records.write_bytes(bytes(batch([b"after"])))
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("counting descriptors needs /proc/self/fd")
    done = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "logs"), str(records)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert float(lines["per-partition"]) <= 1.0, lines
    assert 0 < int(lines["refused"]) < 300, lines
    assert lines["offline"] == "0", lines
    assert int(lines["left"]) >= 64, lines  # kept for connections
    assert lines["appended"] == "1", lines
