"""Replication throttles on a real cluster: a follower that was down catches up no faster
than leader.replication.throttled.rate / follower.replication.throttled.rate allow, and much
faster without them."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterator

import pytest

from broker.testing.cluster import RaftkaCluster, start_cluster
from clients.admin import BlockingAdmin
from tests.integration.quorum_helpers import produce

pytestmark = pytest.mark.slow

RATE = 512 * 1024            # bytes/s
BACKLOG = 4 * 1024 * 1024    # bytes produced while the follower is down
FETCH_MAX = 256 * 1024       # replica.fetch.max.bytes: the most one fetch may overshoot by
RECORD = 32 * 1024


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RaftkaCluster]:
    with start_cluster(tmp_path_factory.mktemp("throttles"), nodes=3,
                       replica_fetch_max_bytes=FETCH_MAX) as started:
        yield started


def _leader_and_follower(admin: BlockingAdmin, topic: str) -> tuple[int, int]:
    (description,) = admin.describe_topics([topic])
    partition = description.partitions[0]
    return partition.leader, next(r for r in partition.replicas if r != partition.leader)


def _in_isr(admin: BlockingAdmin, topic: str, broker: int) -> bool:
    try:
        (description,) = admin.describe_topics([topic])
    except Exception:  # a node is restarting
        return False
    return broker in description.partitions[0].isr


def _catch_up_seconds(cluster: RaftkaCluster, topic: str, follower: int) -> float:
    """Stop `follower`, produce BACKLOG bytes, restart it: seconds from the restart until it
    is back in the ISR."""
    cluster.stop(follower)
    with cluster.admin() as admin:
        deadline = time.monotonic() + 60
        while _in_isr(admin, topic, follower):
            assert time.monotonic() < deadline, "the stopped follower stayed in the ISR"
            time.sleep(0.1)
    produce(cluster.bootstrap_servers, topic, [bytes(RECORD)] * (BACKLOG // RECORD), 1)
    started = time.monotonic()
    cluster.restart(follower)
    with cluster.admin() as admin:
        while not _in_isr(admin, topic, follower):
            assert time.monotonic() - started < 120, "the follower never rejoined the ISR"
            time.sleep(0.05)
    return time.monotonic() - started


# A throttle may let one fetch past the rate: the backlog takes at least this long.
LOWER_BOUND_S = (BACKLOG - FETCH_MAX) / RATE


def test_leader_throttle_bounds_catch_up(cluster: RaftkaCluster) -> None:
    topic = "leader-throttled"
    cluster.create_topic(topic, 1, 3)
    with cluster.admin() as admin:
        leader, follower = _leader_and_follower(admin, topic)
    unthrottled = _catch_up_seconds(cluster, topic, follower)
    assert unthrottled < LOWER_BOUND_S, f"unthrottled catch-up took {unthrottled:.1f} s"

    with cluster.admin() as admin:
        admin.incremental_alter_configs(topic, {
            "leader.replication.throttled.replicas": f"0:{leader}"})
        admin.incremental_alter_broker_configs(leader, {
            "leader.replication.throttled.rate": str(RATE)})
        assert admin.describe_broker_configs(
            leader, ["leader.replication.throttled.rate"])[
            "leader.replication.throttled.rate"].source == "DYNAMIC_BROKER_CONFIG"
    try:
        throttled = _catch_up_seconds(cluster, topic, follower)
    finally:
        with cluster.admin() as admin:
            admin.incremental_alter_broker_configs(leader, {
                "leader.replication.throttled.rate": None})
    assert throttled >= LOWER_BOUND_S, (
        f"{BACKLOG} bytes at {RATE} B/s caught up in {throttled:.1f} s")


def test_follower_throttle_bounds_catch_up(cluster: RaftkaCluster) -> None:
    topic = "follower-throttled"
    cluster.create_topic(topic, 1, 3)
    with cluster.admin() as admin:
        _, follower = _leader_and_follower(admin, topic)
        admin.incremental_alter_configs(topic, {
            "follower.replication.throttled.replicas": "*"})
        # The cluster-wide default reaches every broker.
        admin.incremental_alter_broker_configs(None, {
            "follower.replication.throttled.rate": str(RATE)})
    try:
        throttled = _catch_up_seconds(cluster, topic, follower)
    finally:
        with cluster.admin() as admin:
            admin.incremental_alter_broker_configs(None, {
                "follower.replication.throttled.rate": None})
    assert throttled >= LOWER_BOUND_S, (
        f"{BACKLOG} bytes at {RATE} B/s caught up in {throttled:.1f} s")
