"""Failover of the active controller in a cluster of three combined nodes (real processes)."""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

import pytest

from tests.integration.quorum_helpers import (
    QuorumCluster,
    create_topics,
    partition_counts,
    quorum_status_cli,
    start_cluster,  # noqa: F401  (fixture)
    topic_ids,
    wait_for,
)

pytestmark = pytest.mark.slow
logger = logging.getLogger(__name__)

# Kafka's own bar for a KRaft controller failover with default election timeouts.
NEW_LEADER_WITHIN_S = 5.0
# Each partition keeps a replica on some survivor, so it keeps a leader through the kill.
TOPICS_BEFORE = {"before-kill-a": (4, 3), "before-kill-b": (2, 2), "before-kill-c": (5, 2)}
# Two replicas: the killed node may already be fenced, leaving two usable brokers.
TOPICS_DURING = {"while-node-down": (3, 2)}


def shows_topics(response: dict[str, Any] | None,
                 expected: dict[str, tuple[int, int]]) -> bool:
    """Metadata lists every expected topic with all its partitions, each with a leader."""
    if response is None:
        return False
    counts = partition_counts(response)
    if any(counts.get(name) != parts for name, (parts, _) in expected.items()):
        return False
    return all(part["leader_id"] >= 0 for topic in response["topics"]
               if topic["name"] in expected for part in topic["partitions"])


def different_live_leader(cluster: QuorumCluster, survivors: list[int],
                          killed: int) -> Callable[[], int | None]:
    def probe() -> int | None:
        for leader in cluster.quorum_leaders(survivors).values():
            if leader != killed and leader in survivors:
                return leader
        return None
    return probe


def restarted_voter_caught_up(cluster: QuorumCluster, node_id: int) -> Callable[[], Any]:
    """The leader's DescribeQuorum shows `node_id`'s log end at or past the high watermark."""
    def probe() -> tuple[int, int] | None:
        part = cluster.describe_quorum_on_leader()
        if part is None:
            return None
        for voter in part["current_voters"]:
            if (voter["replica_id"] == node_id
                    and voter["log_end_offset"] >= part["high_watermark"] > 0):
                return (voter["log_end_offset"], part["high_watermark"])
        return None
    return probe


def test_killing_the_active_controller_elects_a_new_one_keeps_topics_and_the_node_catches_up(
        start_cluster: Callable[..., QuorumCluster]) -> None:
    cluster = start_cluster(nodes=3)
    first = cluster.broker_ids[0]
    create_topics(cluster.client_port(first), TOPICS_BEFORE)
    for node_id in cluster.broker_ids:
        wait_for(lambda: shows_topics(cluster.metadata_from(node_id), TOPICS_BEFORE), 15,
                 f"node {node_id} to list the new topics", details=cluster.logs)
    ids_before = topic_ids(cluster.metadata_from(first) or {})

    leader = wait_for(lambda: cluster.quorum_leader(), 10, "a quorum leader",
                      details=cluster.logs)
    survivors = [n for n in cluster.broker_ids if n != leader]
    killed_at = time.monotonic()
    cluster.kill(leader)
    new_leader = wait_for(different_live_leader(cluster, survivors, leader), 15,
                          f"a leader other than killed node {leader}", interval=0.02,
                          details=cluster.logs)
    elapsed = time.monotonic() - killed_at
    logger.info("node %d leads %.2f s after node %d was killed", new_leader, elapsed, leader)
    assert elapsed < NEW_LEADER_WITHIN_S, (
        f"node {new_leader} took over {elapsed:.2f} s after node {leader} was killed")

    for node_id in survivors:
        response = wait_for(
            lambda: (r := cluster.metadata_from(node_id)) and shows_topics(r, TOPICS_BEFORE)
            and r, 15, f"survivor {node_id} to list the topics with leaders",
            details=cluster.logs)
        assert {n: topic_ids(response)[n] for n in TOPICS_BEFORE} == {
            n: ids_before[n] for n in TOPICS_BEFORE}

    create_topics(cluster.client_port(survivors[0]), TOPICS_DURING)
    everything = {**TOPICS_BEFORE, **TOPICS_DURING}
    for node_id in survivors:
        wait_for(lambda: shows_topics(cluster.metadata_from(node_id), everything), 15,
                 f"survivor {node_id} to list {sorted(TOPICS_DURING)}", details=cluster.logs)

    cluster.restart(leader)
    reference = topic_ids(cluster.metadata_from(survivors[0]) or {})
    response = wait_for(
        lambda: (r := cluster.metadata_from(leader)) and shows_topics(r, everything) and r,
        20, f"restarted node {leader} to list every topic", details=cluster.logs)
    assert {n: topic_ids(response)[n] for n in everything} == {
        n: reference[n] for n in everything}
    wait_for(restarted_voter_caught_up(cluster, leader), 20,
             f"restarted node {leader}'s log end to reach the high watermark",
             details=cluster.logs)
    status = quorum_status_cli(cluster.client_port(leader))
    assert status is not None, "raftka quorum describe failed on the restarted node"
    # Every voter runs again, so any of them may lead by now.
    assert status["leader_id"] in cluster.controller_ids, status
    assert sorted(status["current_voters"]) == sorted(cluster.controller_ids), status
