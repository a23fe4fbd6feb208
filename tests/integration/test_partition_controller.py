"""The active controller cut off from the other voters (iptables on the nodes' own
addresses): the majority elects a controller with a higher epoch, brokers follow it, and
nothing the old controller took is ever committed."""

from __future__ import annotations

import logging
import time

import pytest

from cluster.testing.waiting import wait_for
from clients.protocol.errors import ErrorCode
from tests.integration.fault_support import (
    cluster_view,
    create_topic,
    node_hosts,
    partitioner,
    quorum_view,
    topic_names,
)

pytestmark = pytest.mark.slow
logger = logging.getLogger(__name__)

FAST = {"broker_session_timeout_ms": 3000, "broker_heartbeat_interval_ms": 500}


def test_isolated_controller_is_replaced_and_commits_nothing(raftka_cluster) -> None:
    hosts = node_hosts(3)
    cut = partitioner()
    cluster = raftka_cluster(3, hosts=hosts, **FAST)
    client = {n: (cluster.host(n), cluster.info.node(n).client_port) for n in cluster.node_ids}
    voter = {n: (cluster.host(n), cluster.info.node(n).controller_port)
             for n in cluster.node_ids}
    old, old_epoch = wait_for(lambda: quorum_view(*voter[1]), "a quorum leader", 10)
    others = [n for n in cluster.node_ids if n != old]

    with cut:
        cut.isolate(cluster.host(old), [cluster.host(n) for n in others])
        isolated_at = time.monotonic()
        # A decision asked of the isolated side right away, while the old controller may
        # still believe it leads: it can never commit, so it is never acknowledged.
        assert create_topic(*client[old], "asked-of-the-old-controller") != ErrorCode.NONE

        def replaced() -> tuple[int, int] | None:
            views = [quorum_view(*voter[n]) for n in others]
            if all(v is not None and v[0] in others and v[1] > old_epoch for v in views) \
                    and views[0] == views[1]:
                return views[0]
            return None
        new, new_epoch = wait_for(replaced, "the majority to elect a new controller", 20)
        logger.info("controller %d (epoch %d) replaced by %d (epoch %d) %.2f s after its "
                    "isolation", old, old_epoch, new, new_epoch, time.monotonic() - isolated_at)
        # The new controller fences the silent broker, then decides as usual (retried as
        # an admin client retries; a retry finding the topic means an earlier try made it).
        attempts: list[int | None] = []

        def created() -> bool:
            attempts.append(create_topic(*client[others[0]], "decided-by-the-new-controller"))
            return attempts[-1] == ErrorCode.NONE or (
                attempts[-1] == ErrorCode.TOPIC_ALREADY_EXISTS and len(attempts) > 1)
        wait_for(created, f"the new controller to create a topic (answers so far: "
                          f"{attempts})", 20)
        # The brokers on the majority side heartbeat to the new controller: never fenced.
        view = cluster_view(*client[others[0]], "decided-by-the-new-controller")
        assert view is not None and set(others) <= view["brokers"], view
        assert "fencing broker %d" % others[0] not in "".join(
            cluster.info.node(n).log_path.read_text() for n in others)
        # The old node sees nothing of the new side's decisions while cut off.
        assert "decided-by-the-new-controller" not in (topic_names(*client[old]) or set())

    # Healed: every broker follows the new controller, in its epoch, and has its decisions;
    # the isolated controller's never-committed decision is nowhere.
    def followed() -> bool:
        for n in cluster.node_ids:
            names = topic_names(*client[n])
            if quorum_view(*voter[n]) != (new, new_epoch) or names is None \
                    or "decided-by-the-new-controller" not in names:
                return False
        return True
    wait_for(followed, "every node to follow the new controller", 20)
    for n in cluster.node_ids:
        assert "asked-of-the-old-controller" not in topic_names(*client[n])
