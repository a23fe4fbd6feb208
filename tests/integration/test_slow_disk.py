"""A slow disk (fsyncs stalled by a block-I/O throttle on the broker's process) under a
`flush.messages=1` topic does not hold up requests for other partitions: the fsyncs run off
the event loop, and each produce to the slow topic is still answered only once its record
is synced."""

from __future__ import annotations

import os
import shutil
import statistics
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from cluster.testing.disks import move_log_dirs
from clients.protocol.errors import ErrorCode
from tests.integration.fault_support import produce, unavailable

pytestmark = pytest.mark.slow

BLKIO = Path("/sys/fs/cgroup/blkio")
WRITE_IOPS = 4                 # fsyncs then take a quarter of a second or more each
DISK_DIR = Path("/var/tmp")    # /tmp may be a tmpfs, which no block throttle slows


class BlockThrottle:
    """A blkio cgroup (v1) limiting write IOPS on one device, holding one process."""

    def __init__(self, device: int) -> None:
        if os.geteuid() != 0 or not (BLKIO / "cgroup.procs").exists():
            unavailable("a slow disk needs root and the cgroup v1 blkio controller")
        self.path = BLKIO / f"raftka-slow-disk-{uuid.uuid4().hex[:8]}"
        self.path.mkdir()
        limit = f"{os.major(device)}:{os.minor(device)} {WRITE_IOPS}"
        try:
            (self.path / "blkio.throttle.write_iops_device").write_text(limit)
        except OSError as exc:
            self.close()
            unavailable(f"cannot throttle device {limit!r}: {exc}")

    def hold(self, pid: int) -> None:
        (self.path / "cgroup.procs").write_text(str(pid))

    def close(self) -> None:
        for pid in (self.path / "cgroup.procs").read_text().split():
            (BLKIO / "cgroup.procs").write_text(pid)
        self.path.rmdir()


def timed_produce(host: str, port: int, topic: str, value: bytes) -> float:
    started = time.perf_counter()
    answer = produce(host, port, topic, value, acks=1, timeout_ms=30_000)
    elapsed = time.perf_counter() - started
    assert answer is not None and answer["error_code"] == ErrorCode.NONE, answer
    return elapsed


@pytest.fixture
def disk_dir() -> Iterator[Path]:
    """A log dir on a block device, removed after the cluster (set up after it) is gone."""
    path = DISK_DIR / f"raftka-slow-disk-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_a_slow_disk_does_not_stall_other_partitions(disk_dir: Path, raftka_cluster) -> None:
    if os.major(disk_dir.stat().st_dev) == 0:
        unavailable(f"{DISK_DIR} is not on a block device")
    cluster = raftka_cluster(1)
    move_log_dirs(cluster, 1, [disk_dir])
    cluster.create_topic("slow", 1, 1, {"flush.messages": "1"})
    cluster.create_topic("fast", 1, 1)
    host, port = cluster.host(1), cluster.info.node(1).client_port
    from confluent_kafka import Producer

    throttle = BlockThrottle(disk_dir.stat().st_dev)
    try:
        throttle.hold(cluster.pid(1))
        # A stream of produce requests to the slow topic, each waiting for its fsync.
        flood = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": 1,
                          "linger.ms": 0, "batch.num.messages": 1,
                          "max.in.flight.requests.per.connection": 5})
        for i in range(400):
            flood.produce("slow", b"s%d" % i)
        flood.poll(0)
        slow = [timed_produce(host, port, "slow", b"timed-slow") for _ in range(3)]
        fast = [timed_produce(host, port, "fast", b"f%d" % i) for i in range(20)]
        flood.purge()
        flood.flush(0)
    finally:
        throttle.close()
    # The throttle did make the disk slow: a synced append waits a long time...
    assert statistics.median(slow) >= 0.2, slow
    # ...while the other partition, which needs no fsync, is answered meanwhile.
    assert statistics.median(fast) < statistics.median(slow) / 4, (fast, slow)
    assert max(fast) < statistics.median(slow), (fast, slow)
