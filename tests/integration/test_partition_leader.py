"""A partition leader cut off from its followers and the controller, still reachable by
clients (iptables on the nodes' own addresses): nothing it takes is acknowledged, the
controller fences it and elects a new leader from the ISR, and on healing it truncates its
divergent suffix and rejoins. Nothing acknowledged is lost."""

from __future__ import annotations

import logging
import time

import pytest

from cluster.testing.waiting import wait_for
from clients.protocol.errors import ErrorCode
from tests.integration.fault_support import (
    cluster_view,
    log_values,
    node_hosts,
    partitioner,
    produce,
    produce_acknowledged,
)

pytestmark = pytest.mark.slow
logger = logging.getLogger(__name__)

SESSION_TIMEOUT_MS = 3000
FAST = {"broker_session_timeout_ms": SESSION_TIMEOUT_MS, "broker_heartbeat_interval_ms": 500}
TOPIC = "isolated-leader"


def test_isolated_leader_is_fenced_and_rejoins_without_losing_acknowledged_writes(
        raftka_cluster) -> None:
    hosts = node_hosts(3)
    cut = partitioner()
    cluster = raftka_cluster(3, hosts=hosts, **FAST)
    cluster.create_topic(TOPIC, 1, 3, {"min.insync.replicas": "2"})
    port = {n: cluster.info.node(n).client_port for n in cluster.node_ids}
    addr = {n: (cluster.host(n), port[n]) for n in cluster.node_ids}
    before = wait_for(lambda: cluster_view(*addr[1], TOPIC), "metadata", 10)
    old = before["leader"]
    others = [n for n in cluster.node_ids if n != old]
    acknowledged: list[bytes] = []
    for i in range(5):
        value = b"before-%d" % i
        assert produce_acknowledged(*addr[old], TOPIC, value)["error_code"] == ErrorCode.NONE
        acknowledged.append(value)

    with cut:
        cut.isolate(cluster.host(old), [cluster.host(n) for n in others])
        isolated_at = time.monotonic()
        # The old leader still takes the write from a client (127.0.0.1 is not cut) but
        # can never acknowledge it: no follower fetches it. Once its session with the
        # controller has lapsed it fails the waiting request rather than let it time out.
        answer = produce(*addr[old], TOPIC, b"never-acknowledged", timeout_ms=20_000)
        assert answer is not None, "no answer within the request's own timeout"
        assert answer["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER, answer

        def new_leader() -> dict | None:
            view = cluster_view(*addr[others[0]], TOPIC)
            if view and view["leader"] in others and old not in view["brokers"]:
                return view
            return None
        after = wait_for(new_leader, "the controller to fence the old leader and elect "
                                     "another from the ISR", 30)
        fenced_after = time.monotonic() - isolated_at
        logger.info("leader %d fenced and replaced by %d %.2f s after its isolation",
                    old, after["leader"], fenced_after)
        assert fenced_after >= SESSION_TIMEOUT_MS / 1000 - 0.5, fenced_after
        assert after["epoch"] > before["epoch"]
        assert old not in after["isr"] and set(after["isr"]) == set(others)
        new = after["leader"]
        for i in range(5):
            value = b"during-%d" % i
            answer = produce_acknowledged(*addr[new], TOPIC, value)
            assert answer["error_code"] == ErrorCode.NONE, answer
            if i == 0:
                logger.info("first write acknowledged by the new leader %.2f s after the "
                            "isolation", time.monotonic() - isolated_at)
            acknowledged.append(value)
        # The old leader is still cut off, without a session: it refuses writes outright.
        answer = produce(*addr[old], TOPIC, b"stale-leader", timeout_ms=1000)
        assert answer is not None and \
            answer["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER, answer
        # The write it took before sits in its log: the divergent suffix it must drop.
        stale = log_values(cluster.info.node(old).dir / "data", TOPIC)
        assert stale[len(acknowledged) - 5:] == [b"never-acknowledged"]

    # Healed: the old leader learns the new epoch, truncates its suffix, rejoins the ISR.
    wait_for(lambda: (v := cluster_view(*addr[new], TOPIC)) and len(v["isr"]) == 3,
             "the old leader to rejoin the ISR", 30)
    final = log_values(cluster.info.node(new).dir / "data", TOPIC)
    assert final == acknowledged
    wait_for(lambda: log_values(cluster.info.node(old).dir / "data", TOPIC) == final,
             "the old leader's log to equal the new leader's", 10)
