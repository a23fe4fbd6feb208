"""Observers (read-only nodes) follow the log but never count towards the majority."""

from __future__ import annotations

import pytest

from kraft import NotLeaderError, QuorumError
from tests.unit.kraft.support import wait_until

OBSERVER_ID = 9


async def test_observer_applies_committed_batches_and_is_reported_by_leader(cluster_factory) -> None:
    cluster = cluster_factory(3)
    cluster.start_all()
    observer = cluster.start(OBSERVER_ID)
    leader = await cluster.leader()
    offset = await leader.append([b"o1", b"o2"])
    await wait_until(lambda: cluster.machines[OBSERVER_ID].records() == [b"o1", b"o2"], 5,
                     "the observer to apply")
    assert cluster.machines[OBSERVER_ID].entries[0][0] == offset
    await observer.wait_applied(offset, timeout_ms=5000)

    status = await wait_until(lambda: (s := leader.status()).observers and s, 5, "the leader to see the observer")
    assert [o.node_id for o in status.observers] == [OBSERVER_ID]
    assert OBSERVER_ID not in {v.node_id for v in status.voters}
    observer_status = observer.status()
    assert not observer_status.is_voter and not observer_status.is_leader
    assert observer_status.leader_id == leader.config.node_id
    with pytest.raises(NotLeaderError) as info:
        await observer.append([b"nope"])
    assert info.value.leader_id == leader.config.node_id


async def test_observer_does_not_count_towards_the_majority(cluster_factory) -> None:
    # Two voters plus an observer: with one voter gone, leader + observer would be 2 of 3 if the
    # observer voted; as a read-only node it must not help, so nothing more can commit.
    cluster = cluster_factory(2)
    cluster.start_all()
    cluster.start(OBSERVER_ID)
    leader = await cluster.leader()
    await leader.append([b"with-majority"])
    await wait_until(lambda: cluster.machines[OBSERVER_ID].records() == [b"with-majority"], 5,
                     "the observer to apply")
    follower_id = next(i for i in cluster.voters if i != leader.config.node_id)
    cluster.stop(follower_id)
    with pytest.raises(QuorumError):  # timeout, or NotLeaderError once the leader steps down
        await leader.append([b"without-majority"], timeout_ms=2000)
    assert cluster.machines[OBSERVER_ID].records() == [b"with-majority"]
    assert b"without-majority" not in cluster.machines[leader.config.node_id].records()
