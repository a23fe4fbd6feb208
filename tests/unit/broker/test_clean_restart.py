"""A broker restarted after a clean shutdown names its previous epoch (Kafka 3.7's
previous_broker_epoch) and registers at once, while its old session is still valid."""

from __future__ import annotations

import uuid
from pathlib import Path

import trio

from broker.controller_client import ControllerClient
from broker.lifecycle import (
    BROKER_EPOCH_FILE,
    BrokerIdentity,
    BrokerLifecycleManager,
    LifecycleSettings,
    save_broker_epoch,
    take_previous_broker_epoch,
)
from clients.protocol import ApiKey, ErrorCode
from metadata.settings import ControllerSettings
from tests.unit.broker.controller_server.support import (CLUSTER_ID, Voter, connect,
    running_quorum, wait_until)

BROKER_ID = 7
# A session far longer than the test: without the previous epoch a restart is refused.
SETTINGS = ControllerSettings(broker_session_timeout_ms=120_000,
                              auto_leader_rebalance_enable=False)
LIFECYCLE = LifecycleSettings(heartbeat_interval_s=0.2, session_timeout_s=120.0,
                              request_timeout_s=2.0)


def identity() -> BrokerIdentity:
    return BrokerIdentity(BROKER_ID, CLUSTER_ID, (("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT"),))


def manager(voter: Voter, channel: ControllerClient, epoch_dir: Path) -> BrokerLifecycleManager:
    # The broker follows the same metadata the controller applies.
    return BrokerLifecycleManager(identity(), channel, lambda: voter.state.applied_offset,
                                  LIFECYCLE, clean_shutdown_dir=epoch_dir)


def test_epoch_file_is_read_once_and_bad_content_ignored(tmp_path: Path) -> None:
    assert take_previous_broker_epoch(tmp_path) == -1
    save_broker_epoch(tmp_path, 42)
    assert take_previous_broker_epoch(tmp_path) == 42
    assert not (tmp_path / BROKER_EPOCH_FILE).exists()
    assert take_previous_broker_epoch(tmp_path) == -1
    (tmp_path / BROKER_EPOCH_FILE).write_text("garbage")
    assert take_previous_broker_epoch(tmp_path) == -1
    assert not (tmp_path / BROKER_EPOCH_FILE).exists()


async def test_clean_restart_registers_within_the_old_session(tmp_path: Path) -> None:
    epoch_dir = tmp_path / "metadata"
    epoch_dir.mkdir()
    async with running_quorum(tmp_path / "quorum", 1, SETTINGS) as quorum:
        leader = await quorum.leader()
        voters = {leader.node_id: leader.address}
        async with ControllerClient(voters, "broker-7") as channel:
            first = manager(leader, channel, epoch_dir)
            assert first.identity.previous_broker_epoch == -1
            async with trio.open_nursery() as nursery:
                await nursery.start(first.run)
                with trio.fail_after(10):
                    await first.wait_until(lambda m: not m.is_fenced)
                assert await first.controlled_shutdown(timeout_s=10)
                nursery.cancel_scope.cancel()
            old_epoch = first.broker_epoch
            assert (epoch_dir / BROKER_EPOCH_FILE).read_text().strip() == str(old_epoch)

            # Control: a new incarnation that does not name the old epoch is a duplicate.
            async with connect(leader) as conn:
                refused = await conn.request(ApiKey.BROKER_REGISTRATION, {
                    **identity().registration_request(), "incarnation_id": uuid.uuid4()})
            assert refused["error_code"] == ErrorCode.DUPLICATE_BROKER_REGISTRATION

            second = manager(leader, channel, epoch_dir)
            assert second.identity.previous_broker_epoch == old_epoch
            assert not (epoch_dir / BROKER_EPOCH_FILE).exists()
            async with trio.open_nursery() as nursery:
                await nursery.start(second.run)
                with trio.fail_after(10):
                    await second.wait_until(lambda m: m.is_registered and not m.is_fenced)
                nursery.cancel_scope.cancel()
            assert second.broker_epoch > old_epoch
            reg = await wait_until(lambda: leader.state.image.broker(BROKER_ID), 5, "the broker")
            assert reg.incarnation_id == second.identity.incarnation_id
            # Stopped without a controlled shutdown (a crash): nothing for the next start.
            assert take_previous_broker_epoch(epoch_dir) == -1
