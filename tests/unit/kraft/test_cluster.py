"""Three voters in one process: election, replication, leader-only appends, failover."""

from __future__ import annotations

import pytest
import trio

from kraft import NotLeaderError
from tests.unit.kraft.support import wait_until


async def test_leader_elected_and_append_applies_on_all_voters(cluster_factory) -> None:
    cluster = cluster_factory(3)
    cluster.start_all()
    leader = await cluster.leader()
    offset = await leader.append([b"a", b"b"])
    second = await leader.append([b"c"])
    assert second > offset
    await wait_until(lambda: all(m.records() == [b"a", b"b", b"c"] for m in cluster.machines.values()),
                     5, "every voter to apply both commands")
    for machine in cluster.machines.values():
        assert [(o, r) for o, _, r in machine.entries] == [(offset, [b"a", b"b"]), (second, [b"c"])]
    # A voter may apply `second` (its commit came with the entry) before the leader has its
    # acknowledgement: the leader's view of every voter's end catches up a moment later.
    await wait_until(lambda: all(v.log_end_offset is not None and v.log_end_offset >= second
                                 for v in leader.status().voters),
                     5, "the leader to see every voter's log reach the second append")
    status = leader.status()
    assert status.is_leader and status.leader_id == leader.config.node_id
    assert status.high_watermark >= second and status.applied_offset >= second
    assert {v.node_id for v in status.voters} == set(cluster.voters)


async def test_append_on_follower_raises_not_leader_with_leader_id(cluster_factory) -> None:
    cluster = cluster_factory(3)
    cluster.start_all()
    leader = await cluster.leader()
    leader_id = leader.config.node_id
    follower = next(q for q in cluster.nodes.values() if q is not leader)
    await wait_until(lambda: follower.status().leader_id == leader_id, 5, "the follower to learn the leader")
    with pytest.raises(NotLeaderError) as info:
        await follower.append([b"x"])
    assert info.value.leader_id == leader_id


async def test_epoch_is_the_raft_term_and_applies_carry_it(cluster_factory) -> None:
    cluster = cluster_factory(3)
    cluster.start_all()
    leader = await cluster.leader()
    epoch = await leader.wait_ready()
    assert epoch == leader.status().epoch >= 1
    offset = await leader.append([b"e"])
    assert cluster.machines[leader.config.node_id].entries[-1][:2] == (offset, epoch)


async def test_new_leader_after_leader_loss_and_appends_continue(cluster_factory) -> None:
    cluster = cluster_factory(3)
    cluster.start_all()
    old = await cluster.leader()
    await old.append([b"before"])
    old_id, old_epoch = old.config.node_id, old.status().epoch
    cluster.stop(old_id)
    lost_at = trio.current_time()
    new = await cluster.leader(timeout=5)
    elected_after = trio.current_time() - lost_at
    assert new.config.node_id != old_id
    assert new.status().epoch > old_epoch
    assert elected_after < 5
    await new.append([b"after"])
    survivors = [cluster.machines[node_id] for node_id in cluster.nodes]
    await wait_until(lambda: all(m.records() == [b"before", b"after"] for m in survivors),
                     5, "both survivors to apply")


async def test_failover_with_default_timings_elects_within_five_seconds(cluster_factory) -> None:
    cluster = cluster_factory(3, election_timeout_ms=1000, election_backoff_max_ms=1000,
                              heartbeat_interval_ms=100, fetch_timeout_ms=2000)
    cluster.start_all()
    old = await cluster.leader()
    cluster.stop(old.config.node_id)
    lost_at = trio.current_time()
    new = await cluster.leader(timeout=5)
    assert trio.current_time() - lost_at < 5
    await new.append([b"after-default-failover"])


async def test_leader_status_reports_followers_progress(cluster_factory) -> None:
    cluster = cluster_factory(3)
    cluster.start_all()
    leader = await cluster.leader()
    offset = await leader.append([b"p"])

    def caught_up():
        status = leader.status()
        followers = [v for v in status.voters if v.node_id != leader.config.node_id]
        return all(v.log_end_offset == status.log_end_offset and v.lag == 0 for v in followers) and status

    status = await wait_until(caught_up, 5, "followers to catch up")
    assert status.log_end_offset >= offset
    assert all(v.last_contact_ms is not None and v.last_contact_ms < 2000 for v in status.voters)
