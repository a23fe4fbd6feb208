"""Broker liveness: fencing a silent broker, and controlled shutdown (real processes)."""

from __future__ import annotations

import logging
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

from cluster.launcher.processes import exit_code
from tests.integration.quorum_helpers import (
    FAST_OVERRIDES,
    NO_LEADER,
    PartitionView,
    QuorumCluster,
    create_topics,
    listed_brokers,
    metadata,
    partition_views,
    start_cluster,  # noqa: F401  (fixture)
    wait_for,
)

pytestmark = pytest.mark.slow
logger = logging.getLogger(__name__)

SESSION_TIMEOUT_S = int(FAST_OVERRIDES["broker.session.timeout.ms"]) / 1000
# Room for the controller's expiry check period, the Raft commit and metadata propagation.
FENCING_MARGIN_S = 5.0
POLL_INTERVAL_S = 0.05
# How long a committed metadata change may take to show in another broker's Metadata.
PROPAGATION_S = 0.5


def all_led(cluster: QuorumCluster, node_id: int, topic: str,
            partitions: int) -> Callable[[], dict[tuple[str, int], PartitionView] | None]:
    """Probe: the partitions of `topic` as node `node_id` sees them, once each has a leader."""
    def probe() -> dict[tuple[str, int], PartitionView] | None:
        response = cluster.metadata_from(node_id)
        if response is None:
            return None
        views = {k: v for k, v in partition_views(response).items() if k[0] == topic}
        if len(views) != partitions or any(v.leader == NO_LEADER for v in views.values()):
            return None
        return views
    return probe


def create_led_topic(cluster: QuorumCluster, topic: str,
                     partitions: int) -> dict[tuple[str, int], PartitionView]:
    """Create `topic` on every broker (replication 3) and wait until each broker sees every
    partition led; returns the first broker's view."""
    brokers = cluster.broker_ids
    create_topics(cluster.client_port(brokers[0]), {topic: (partitions, 3)})
    # The first broker last, so the view returned is one taken after all the others agreed.
    for node_id in [*brokers[1:], brokers[0]]:
        view = wait_for(all_led(cluster, node_id, topic, partitions), 15,
                        f"node {node_id} to see every partition of {topic} led",
                        details=cluster.logs)
    return view


def leader_counts(views: dict[Any, PartitionView]) -> Counter[int]:
    return Counter(view.leader for view in views.values())


@dataclass
class ShutdownWatch:
    """What Metadata polls on a witness showed while a node shut down."""

    polls: int = 0
    exited_after_s: float = -1.0
    # First time (seconds since SIGTERM) the victim led no partition of the topic.
    moved_after_s: float = -1.0
    last: dict[str, Any] = field(default_factory=dict)
    # (seconds since SIGTERM, partition, brokers listed) for each leaderless observation
    # while an ISR member was listed.
    gaps: list[tuple[float, PartitionView, set[int]]] = field(default_factory=list)


def watch_shutdown(cluster: QuorumCluster, victim: int, witness_port: int, topic: str,
                   timeout: float = 30.0) -> ShutdownWatch:
    """Poll Metadata every POLL_INTERVAL_S from now until `victim` has exited, then for one
    more session timeout (so its fencing is watched too). Fails if it does not exit."""
    watch = ShutdownWatch()
    started = time.monotonic()
    watch_until = started + timeout
    while time.monotonic() < watch_until:
        response = metadata(witness_port, timeout=2.0)
        if response is not None:
            watch.polls += 1
            watch.last = response
            live = listed_brokers(response)
            views = [v for v in partition_views(response).values() if v.topic == topic]
            for view in views:
                if view.leader == NO_LEADER and set(view.isr) & live:
                    watch.gaps.append((time.monotonic() - started, view, live))
            if watch.moved_after_s < 0 and all(v.leader != victim for v in views):
                watch.moved_after_s = time.monotonic() - started
        if watch.exited_after_s < 0 and not cluster.is_running(victim):
            watch.exited_after_s = time.monotonic() - started
            watch_until = time.monotonic() + SESSION_TIMEOUT_S + 1.0
        time.sleep(POLL_INTERVAL_S)
    if watch.exited_after_s < 0:
        pytest.fail(f"node {victim} still runs {timeout:g} s after SIGTERM\n{cluster.logs()}")
    return watch


def test_broker_that_stops_heartbeating_is_fenced_loses_leaderships_and_returns(
        start_cluster: Callable[..., QuorumCluster]) -> None:
    cluster = start_cluster(nodes=3, controllers=3)
    brokers = cluster.broker_ids
    before = create_led_topic(cluster, "fenced", 6)
    victim = leader_counts(before).most_common(1)[0][0]
    witness = next(b for b in brokers if b != victim)
    assert all(set(v.isr) == set(v.replicas) == set(brokers) for v in before.values())

    def fenced_view() -> dict[tuple[str, int], PartitionView] | None:
        response = cluster.metadata_from(witness)
        if response is None or victim in listed_brokers(response):
            return None
        views = {k: v for k, v in partition_views(response).items() if k[0] == "fenced"}
        if len(views) != len(before):
            return None
        if any(view.leader == victim or victim in view.isr for view in views.values()):
            return None
        return views

    cluster.send_signal(victim, signal.SIGSTOP)
    stopped_at = time.monotonic()
    after = wait_for(fenced_view, SESSION_TIMEOUT_S + FENCING_MARGIN_S + 5,
                     f"broker {victim} to be fenced", details=cluster.logs)
    elapsed = time.monotonic() - stopped_at
    logger.info("broker %d fenced %.2f s after SIGSTOP", victim, elapsed)
    assert elapsed < SESSION_TIMEOUT_S + FENCING_MARGIN_S, (
        f"broker {victim} was fenced only {elapsed:.1f} s after it stopped heartbeating")
    for key, old in before.items():
        new = after[key]
        assert victim not in new.isr, key
        if old.leader == victim:
            assert new.leader in set(old.isr) - {victim}, (key, old, new)
            assert new.leader_epoch > old.leader_epoch, (key, old, new)

    cluster.send_signal(victim, signal.SIGCONT)
    wait_for(lambda: victim in listed_brokers(cluster.metadata_from(witness) or {}), 20,
             f"broker {victim} to be listed again after SIGCONT", details=cluster.logs)


def test_controlled_shutdown_moves_leaderships_without_a_leaderless_gap(
        start_cluster: Callable[..., QuorumCluster]) -> None:
    cluster = start_cluster(nodes=3)
    brokers = cluster.broker_ids
    before = create_led_topic(cluster, "graceful", 6)
    # A node that leads partitions but not the quorum: this is about the broker's duties.
    quorum_leader = wait_for(lambda: cluster.quorum_leader(), 10, "a quorum leader")
    counts = leader_counts(before)
    victim = max((b for b in brokers if b != quorum_leader), key=lambda b: counts[b])
    assert counts[victim] > 0, f"node {victim} leads nothing to move: {before}"
    witness = quorum_leader
    pid = cluster.pid(victim)
    assert pid is not None

    cluster.send_signal(victim, signal.SIGTERM)  # what stop-quorum --node sends
    watch = watch_shutdown(cluster, victim, cluster.client_port(witness), "graceful")
    logger.info("node %d: %d Metadata polls; leaderships moved %.2f s and the process exited "
                "%.2f s after SIGTERM", victim, watch.polls, watch.moved_after_s,
                watch.exited_after_s)
    assert watch.polls >= 10, "too few Metadata answers while the node shut down"
    assert not watch.gaps, (
        f"leaderless partitions while an ISR member was live: {watch.gaps[:5]}")
    # Moved by the shutdown itself, not later by fencing the dead broker: gone from the
    # witness's view by the time the process is gone (plus metadata propagation).
    assert 0 <= watch.moved_after_s <= watch.exited_after_s + PROPAGATION_S, (
        f"leaderships moved {watch.moved_after_s:.2f} s after SIGTERM, the process exited "
        f"after {watch.exited_after_s:.2f} s")
    final = partition_views(watch.last)
    assert all(v.leader != victim for v in final.values()), final
    assert all(v.leader in set(brokers) - {victim} for k, v in final.items()
               if k[0] == "graceful"), final
    assert exit_code(pid) == 0, f"node {victim} exited with {exit_code(pid)}"
    assert f"node {victim} stopped" in cluster.log_text(victim)
    assert cluster.terminate(victim) == []  # already gone; clears the pid file
