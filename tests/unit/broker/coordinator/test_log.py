"""The coordinators' internal-topic writes go through the replica manager's acks=all append,
so they settle as a Produce does: once the follower caught up, with
NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below min.insync.replicas meanwhile, and
with NOT_LEADER_OR_FOLLOWER at once when this broker loses its controller session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from broker.coordinator.log import CoordinatorLogError, ReplicaCoordinatorLog
from clients.protocol import ErrorCode
from metadata.records import PartitionChangeRecord
from tests.unit.broker.log.helpers import batch
from tests.unit.broker.replica.test_replica_manager import Cluster

TOPIC = "__consumer_offsets"
TIMEOUT_MS = 30_000


async def _append_in_background(log: ReplicaCoordinatorLog, outcome: dict[str, Any],
                                nursery: trio.Nursery) -> None:
    async def append() -> None:
        try:
            outcome["offset"] = await log.append(0, batch([b"commit"]))
        except CoordinatorLogError as exc:
            outcome["error"] = exc

    nursery.start_soon(append)
    await trio.sleep(1)
    assert outcome == {}    # appended, and waiting for follower 2


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    c = Cluster(tmp_path)
    yield c
    c.logs.close()


async def test_the_write_completes_once_the_follower_caught_up(cluster, autojump_clock) -> None:
    cluster.topic(TOPIC, replicas=(1, 2))
    log = ReplicaCoordinatorLog(cluster.replicas, TOPIC, TIMEOUT_MS)
    outcome: dict[str, Any] = {}
    async with trio.open_nursery() as nursery:
        await _append_in_background(log, outcome, nursery)
        partition = cluster.replicas.leader_partition(TOPIC, 0)
        cluster.replicas.on_follower_fetch(partition, 2, partition.log_end_offset)
    assert outcome == {"offset": 0}


async def test_the_write_fails_at_once_when_the_session_lapses(cluster, autojump_clock) -> None:
    cluster.topic(TOPIC, replicas=(1, 2))
    log = ReplicaCoordinatorLog(cluster.replicas, TOPIC, TIMEOUT_MS)
    outcome: dict[str, Any] = {}
    began = trio.current_time()
    async with trio.open_nursery() as nursery:
        await _append_in_background(log, outcome, nursery)
        cluster.replicas.set_session_lost(True)
    assert outcome["error"].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert "lost its session" in str(outcome["error"])
    assert trio.current_time() - began < 2      # not after the 30 s timeout


async def test_an_isr_shrunk_below_min_insync_replicas_after_the_append_fails_the_write(
        cluster, autojump_clock) -> None:
    topic_id = cluster.topic(TOPIC, replicas=(1, 2), configs={"min.insync.replicas": "2"})
    log = ReplicaCoordinatorLog(cluster.replicas, TOPIC, TIMEOUT_MS)
    outcome: dict[str, Any] = {}
    async with trio.open_nursery() as nursery:
        await _append_in_background(log, outcome, nursery)
        # The ISR of one lets the HW pass the record, below min.insync.replicas.
        cluster.publish([PartitionChangeRecord(partition_id=0, topic_id=topic_id, isr=(1,))])
    assert outcome["error"].error_code == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    partition = cluster.replicas.leader_partition(TOPIC, 0)
    assert (partition.log_end_offset, partition.high_watermark) == (1, 1)
