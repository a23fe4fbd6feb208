"""What gets applied: fencing of stale-epoch commands, state machine failures, wait_* helpers."""

from __future__ import annotations

import threading

import pytest

from kraft import CommandApplyError, NotLeaderError, QuorumTimeoutError
from kraft.command import encode_command
from tests.unit.kraft.support import ListStateMachine, wait_until
from tests.unit.kraft.test_security import frame, inject


class FailingStateMachine(ListStateMachine):
    """Raises on the record b"boom"."""

    def apply_batch(self, records: list[bytes], offset: int, epoch: int) -> None:
        if b"boom" in records:
            raise RuntimeError("boom")
        super().apply_batch(records, offset, epoch)


async def test_command_from_an_older_epoch_is_fenced_everywhere(cluster_factory) -> None:
    cluster = cluster_factory(1)
    cluster.start_all()
    quorum = await cluster.leader()
    machine = next(iter(cluster.machines.values()))
    epoch = quorum.status().epoch
    port = quorum.config.voters[quorum.config.node_id][1]
    sock = inject(port, epoch - 1, b"stale")  # a leader of an earlier term decided this
    try:
        sock.sendall(frame({"type": "apply_command", "command": encode_command(epoch, [b"current"])}))
        await wait_until(lambda: b"current" in machine.records(), 5, "the current-epoch command")
    finally:
        sock.close()
    assert machine.records() == [b"current"]


async def test_append_bound_to_another_controller_epoch_is_refused(cluster_factory) -> None:
    # A controller that decided under epoch N must not commit once its node leads another term.
    cluster = cluster_factory(1)
    cluster.start_all()
    quorum = await cluster.leader()
    machine = next(iter(cluster.machines.values()))
    epoch = quorum.status().epoch
    for stale in (epoch - 1, epoch + 1):
        with pytest.raises(NotLeaderError, match="stale controller epoch"):
            await quorum.append([b"decided-in-%d" % stale], epoch=stale)
    offset = await quorum.append([b"current"], epoch=epoch)
    assert machine.records() == [b"current"]
    assert machine.entries[-1][:2] == (offset, epoch)


async def test_state_machine_failure_is_reported_and_skipped(cluster_factory) -> None:
    cluster = cluster_factory(1)
    (node_id,) = cluster.voters
    cluster.start(node_id, machine=FailingStateMachine())
    quorum = await cluster.leader()
    with pytest.raises(CommandApplyError):
        await quorum.append([b"boom"])
    offset = await quorum.append([b"fine"])
    assert cluster.machines[node_id].records() == [b"fine"]
    assert quorum.status().applied_offset >= offset


async def test_wait_helpers(cluster_factory) -> None:
    cluster = cluster_factory(3)
    cluster.start_all()
    leader = await cluster.leader()
    follower = next(q for q in cluster.nodes.values() if q is not leader)
    assert await follower.wait_for_leader(timeout_ms=5000) == leader.config.node_id
    offset = await leader.append([b"w"])
    assert await follower.wait_applied(offset, timeout_ms=5000) >= offset
    assert cluster.machines[follower.config.node_id].records() == [b"w"]


async def test_listener_is_called_on_progress(cluster_factory) -> None:
    cluster = cluster_factory(1)
    cluster.start_all()
    quorum = await cluster.leader()
    seen: list[int] = []
    quorum.add_listener(lambda: seen.append(quorum.status().applied_offset))
    offset = await quorum.append([b"l"])
    await wait_until(lambda: any(applied >= offset for applied in seen), 5, "a listener call")


async def test_wait_applied_times_out_for_a_future_offset(cluster_factory) -> None:
    cluster = cluster_factory(1)
    cluster.start_all()
    quorum = await cluster.leader()
    with pytest.raises(QuorumTimeoutError):
        await quorum.wait_applied(10_000, timeout_ms=200)


async def test_quorum_started_from_a_thread_that_exits_keeps_running(cluster_factory) -> None:
    # pysyncobj stops ticking when the thread that built it ends; start() must not depend on it.
    cluster = cluster_factory(1)
    (node_id,) = cluster.voters
    starter = threading.Thread(target=cluster.start, args=(node_id,))
    starter.start()
    starter.join()
    quorum = await cluster.leader()
    assert await quorum.append([b"alive"]) >= 2
