"""A log dir that runs out of space (ENOSPC on a small tmpfs): the append fails with
KAFKA_STORAGE_ERROR and nothing half-written is acknowledged or read; the dir goes offline
and heartbeats report it; leadership moves; with no dir left the broker shuts down cleanly;
after space is freed, a restart recovers a valid log and the broker catches up."""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster.launcher.processes import exit_code, read_pid
from cluster.testing.disks import DiskToolError, move_log_dirs
from cluster.testing.disks import Tmpfs as SharedTmpfs
from cluster.testing.waiting import wait_for
from clients.protocol import ApiKey
from clients.protocol.errors import ErrorCode
from clients.records.batch import iter_record_batches
from tests.integration.fault_support import (
    cluster_view,
    log_values,
    produce,
    produce_acknowledged,
    read_values,
    request,
    unavailable,
)

pytestmark = pytest.mark.slow

FAST = {"broker_session_timeout_ms": 3000, "broker_heartbeat_interval_ms": 500}
VICTIM = 3
TMPFS_SIZE = 1 << 20
FREE_AFTER_BALLAST = 300 << 10
VALUE = b"v" * (40 << 10)


class Tmpfs(SharedTmpfs):
    """A small tmpfs mounted for the test, with a ballast file taking most of it."""

    def __init__(self, path: Path) -> None:
        try:
            super().__init__(path, TMPFS_SIZE)
        except DiskToolError as exc:
            unavailable(str(exc))
        self.fill(leave_free=FREE_AFTER_BALLAST)


@pytest.fixture
def tmpfs_dirs(tmp_path: Path):
    mounted: list[Tmpfs] = []

    def make(name: str) -> Tmpfs:
        fs = Tmpfs(tmp_path / name)
        mounted.append(fs)
        return fs
    try:
        yield make
    finally:
        for fs in mounted:
            fs.unmount()


def create_led_by(addr, topic: str, leader: int, others: list[int]) -> None:
    response = request(*addr, ApiKey.CREATE_TOPICS, {
        "topics": [{"name": topic, "num_partitions": -1, "replication_factor": -1,
                    "assignments": [{"partition_index": 0, "broker_ids": [leader, *others]}],
                    "configs": [{"name": "min.insync.replicas", "value": "2"}]}],
        "timeout_ms": 10000, "validate_only": False}, timeout=15)
    assert response is not None and response["topics"][0]["error_code"] == 0, response


def test_full_log_dirs_go_offline_then_the_broker_shuts_down_and_recovers(
        raftka_cluster, tmpfs_dirs) -> None:
    first, second = tmpfs_dirs("dir-a"), tmpfs_dirs("dir-b")
    cluster = raftka_cluster(3, **FAST)
    move_log_dirs(cluster, VICTIM, [first.path, second.path])
    addr = {n: (cluster.host(n), cluster.info.node(n).client_port) for n in cluster.node_ids}
    others = [n for n in cluster.node_ids if n != VICTIM]
    # Both dirs are empty: "full" goes to the first, "spill" then to the second.
    create_led_by(addr[1], "full", VICTIM, others)
    cluster.wait_for_isr("full", 3)
    create_led_by(addr[1], "spill", VICTIM, others)
    cluster.wait_for_isr("spill", 3)
    assert (first.path / "full-0").is_dir() and (second.path / "spill-0").is_dir()
    before = cluster_view(*addr[1], "full")

    # Fill the first dir through the leader until an append fails.
    acknowledged: list[bytes] = []
    for i in range(FREE_AFTER_BALLAST // len(VALUE) + 5):
        value = VALUE + b"%d" % i
        answer = produce_acknowledged(*addr[VICTIM], "full", value)
        if answer["error_code"] != ErrorCode.NONE:
            break
        acknowledged.append(value)
    assert answer["error_code"] == ErrorCode.KAFKA_STORAGE_ERROR, answer
    assert acknowledged, "the dir filled before anything was written"
    # Nothing half-written: the segment holds whole batches, each one acknowledged.
    segment = (first.path / "full-0" / f"{0:020d}.log").read_bytes()
    assert [r.value for b in iter_record_batches(segment) for r in b.records] == acknowledged
    # The same partition is refused from now on, for reads too, with the storage error.
    assert produce(*addr[VICTIM], "full", b"again")["error_code"] == \
        ErrorCode.KAFKA_STORAGE_ERROR

    # Reported in heartbeats; the controller moves leadership to an in-sync replica.
    moved = wait_for(lambda: (v := cluster_view(*addr[1], "full")) and v["leader"] in others
                     and VICTIM not in v["isr"] and v, "leadership of full to move", 20)
    assert moved["epoch"] > before["epoch"]
    controller_logs = "".join((cluster.info.node(n).log_path).read_text() for n in others
                              + [VICTIM])
    assert f"broker {VICTIM} reports offline log dirs" in controller_logs
    # A new leader's high watermark reaches its log end once the other in-sync replica has
    # fetched from it, a moment after the move (as in Kafka): then every acknowledged record
    # must be readable there. A lost one would keep this waiting until it fails.
    served = wait_for(lambda: (v := read_values(*addr[moved["leader"]], "full")) is not None
                      and len(v) >= len(acknowledged) and v,
                      "the new leader to serve every acknowledged record", 20)
    assert served == acknowledged
    # The broker stays up on its healthy dir and catches up there again.
    assert cluster.pid(VICTIM) is not None
    cluster.wait_for_isr("spill", 3, timeout=30)

    # Fill the second dir through replication: the broker is then out of dirs and stops.
    spill_leader = cluster_view(*addr[1], "spill")["leader"]
    pid = read_pid(cluster.info.node(VICTIM))
    written = 0
    while cluster.pid(VICTIM) is not None and written < 2 * FREE_AFTER_BALLAST:
        assert produce_acknowledged(*addr[spill_leader], "spill", VALUE)["error_code"] == \
            ErrorCode.NONE
        written += len(VALUE)
    wait_for(lambda: cluster.pid(VICTIM) is None, "the broker to shut down", 30)
    log = cluster.info.node(VICTIM).log_path.read_text()
    assert "every log directory is offline" in log
    assert "Traceback" not in log
    assert exit_code(pid) not in (None, 0, -9)

    # Space freed, restarted: recovery finds valid logs and the broker rejoins the ISRs.
    first.free_space()
    second.free_space()
    cluster.restart(VICTIM)
    cluster.wait_for_isr("full", 3, timeout=30)
    cluster.wait_for_isr("spill", 3, timeout=30)
    wait_for(lambda: log_values(first.path, "full") == acknowledged,
             "the recovered replica of full to hold exactly what was acknowledged", 20)
