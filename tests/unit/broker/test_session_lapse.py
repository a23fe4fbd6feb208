"""A broker that hears nothing from the controller for a whole session timeout knows it has
been fenced: the lifecycle manager says so once (and again when the controller is back), and
the replica manager then refuses to act as leader and fails waiting acks=all produces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from broker.controller_client import ControllerUnavailableError
from broker.lifecycle import BrokerIdentity, BrokerLifecycleManager, LifecycleSettings
from broker.replica.append import AppendEntry, AppendOrigin, append_records
from broker.replica.errors import NotLeaderOrFollower
from clients.protocol import ApiKey, ErrorCode
from tests.unit.broker.log.helpers import batch
from tests.unit.broker.replica.test_replica_manager import Cluster

SETTINGS = LifecycleSettings(heartbeat_interval_s=0.5, session_timeout_s=3.0,
                             request_timeout_s=1.0)


class Controller:
    """Answers registration and heartbeats while `answering`; else stays silent."""

    def __init__(self) -> None:
        self.answering = True
        self.heartbeats = 0

    async def send(self, api_key: int, body: dict[str, Any], timeout_ms: int) -> dict[str, Any]:
        if not self.answering:
            await trio.sleep(timeout_ms / 1000)
            raise ControllerUnavailableError("no controller answered")
        if api_key == ApiKey.BROKER_REGISTRATION:
            return {"error_code": 0, "broker_epoch": 5}
        self.heartbeats += 1
        return {"error_code": 0, "is_fenced": False, "is_caught_up": True,
                "should_shut_down": False}


async def test_the_session_lapses_after_the_timeout_and_comes_back(autojump_clock) -> None:
    controller = Controller()
    manager = BrokerLifecycleManager(
        BrokerIdentity(1, "cluster", (("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT"),)),
        controller, lambda: 10, SETTINGS)  # type: ignore[arg-type]
    changes: list[tuple[bool, float]] = []
    manager.on_session_change = lambda lost: changes.append((lost, trio.current_time()))
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        await trio.sleep(10)
        assert changes == [] and controller.heartbeats >= 10   # heartbeats keep it alive
        controller.answering = False
        silent_from = trio.current_time()
        await trio.sleep(10)
        assert [lost for lost, _ in changes] == [True]
        # No later than a session timeout after the last answer (at most one interval
        # before the silence began), and not before.
        lapsed_at = changes[0][1]
        assert silent_from + SETTINGS.session_timeout_s - SETTINGS.heartbeat_interval_s \
            <= lapsed_at <= silent_from + SETTINGS.session_timeout_s + 0.01
        controller.answering = True
        await trio.sleep(5)
        assert [lost for lost, _ in changes] == [True, False]
        nursery.cancel_scope.cancel()


def test_a_broker_without_a_session_refuses_to_lead(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    try:
        cluster.topic("t")
        assert cluster.replicas.leader_partition("t", 0).is_leader
        cluster.replicas.set_session_lost(True)
        with pytest.raises(NotLeaderOrFollower, match="lost its session"):
            cluster.replicas.leader_partition("t", 0)
        cluster.replicas.set_session_lost(False)
        assert cluster.replicas.leader_partition("t", 0).is_leader
    finally:
        cluster.logs.close()


async def test_a_waiting_acks_all_produce_fails_when_the_session_lapses(
        tmp_path: Path, autojump_clock) -> None:
    cluster = Cluster(tmp_path)
    try:
        cluster.topic("t", replicas=(1, 2))          # broker 2 never fetches: no HW advance
        entry = AppendEntry("t", 0, batch([b"a"]))
        began = trio.current_time()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(append_records, cluster.replicas, [entry], -1, 30_000,
                               AppendOrigin.CLIENT)
            await trio.sleep(1)
            assert entry.base_offset == 0 and entry.error_code == 0   # appended, waiting
            cluster.replicas.set_session_lost(True)
        assert entry.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert "lost its session" in (entry.error_message or "")
        assert trio.current_time() - began < 2      # at once, not after the 30 s timeout
    finally:
        cluster.logs.close()
