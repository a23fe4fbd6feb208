"""The leader's replication rules: catch-up tracking, HW over the ISR, ISR proposals and
AlterPartition answers, and the follower's divergence truncation point."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from broker.log.config import LogConfig
from broker.log.partition_log import PartitionLog
from broker.replica import NotEnoughReplicas, Partition
from broker.replica.follower_state import FollowerState
from broker.replica_fetcher import divergence_truncation_offset
from clients.protocol import ErrorCode
from metadata.image import PartitionRegistration
from tests.unit.broker.log.helpers import NOW, batch

LAG_MS = 30_000


def registration(isr: tuple[int, ...] = (1, 2, 3), leader: int = 1, leader_epoch: int = 0,
                 partition_epoch: int = 0) -> PartitionRegistration:
    return PartitionRegistration(replicas=(1, 2, 3), isr=isr, leader=leader,
                                 leader_epoch=leader_epoch, partition_epoch=partition_epoch)


@pytest.fixture
def leader(tmp_path: Path):  # type: ignore[no-untyped-def]
    log = PartitionLog(tmp_path / "t-0", "t", 0, LogConfig.from_overrides({}), now_ms=NOW)
    partition = Partition(1, "t", 0, uuid.uuid4(), log)
    partition.make_leader(registration(), now_ms=NOW)
    yield partition
    log.close()


def append(partition: Partition, count: int = 1, acks: int = 1) -> None:
    partition.append_as_leader(batch([b"v"] * count), acks, NOW)


# -- catch-up tracking --------------------------------------------------------------------

def test_fetch_from_the_leader_end_counts_as_caught_up_now() -> None:
    state = FollowerState.initial(False, 0)
    state.update_fetch(10, 10, 5_000)
    assert state.last_caught_up_time_ms == 5_000


def test_fetch_past_the_previous_leader_end_counts_as_caught_up_at_the_previous_fetch() -> None:
    state = FollowerState.initial(False, 0)
    state.update_fetch(5, 10, 1_000)   # behind: not caught up
    assert state.last_caught_up_time_ms == 0
    state.update_fetch(10, 20, 2_000)  # has all the leader had at the previous fetch
    assert state.last_caught_up_time_ms == 1_000
    state.update_fetch(15, 30, 3_000)  # still short of what the leader had at 2_000
    assert state.last_caught_up_time_ms == 1_000


def test_follower_at_the_leader_end_is_in_sync_however_old_its_catch_up() -> None:
    state = FollowerState(log_end_offset=7, last_caught_up_time_ms=0)
    assert state.is_caught_up(7, 10 * LAG_MS, LAG_MS)
    assert not state.is_caught_up(8, 10 * LAG_MS, LAG_MS)


def test_caught_up_fetch_takes_only_an_in_sync_follower_at_the_end_in_this_epoch(
        leader: Partition) -> None:
    """What the fetch path may answer without a read: anything else goes the full way."""
    append(leader, 3)
    leader.record_follower_fetch(2, 3, NOW)
    epoch = leader.log.epoch_cache.latest_epoch
    assert leader.caught_up_fetch(2, 3, 0, epoch, NOW + 7)
    assert leader.followers[2].last_caught_up_time_ms == NOW + 7
    assert leader.followers[2].last_fetch_time_ms == NOW + 7
    assert leader.caught_up_fetch(2, 3, -1, -1, NOW)  # no epochs given: nothing to check
    assert not leader.caught_up_fetch(3, 3, 0, epoch, NOW)  # its LEO was 0 until now
    assert not leader.caught_up_fetch(2, 2, 0, epoch, NOW)  # behind the end
    assert not leader.caught_up_fetch(2, 3, 1, epoch, NOW)  # an epoch this leader has not
    assert not leader.caught_up_fetch(2, 3, 0, epoch + 1, NOW)  # may have diverged
    leader.make_leader(registration(isr=(1, 3), partition_epoch=1), now_ms=NOW)
    # Out of the ISR: the full path proposes it back.
    assert not leader.caught_up_fetch(2, 3, 0, epoch, NOW)


# -- the high watermark -------------------------------------------------------------------

def test_high_watermark_is_the_smallest_end_over_the_isr(leader: Partition) -> None:
    append(leader, 5)
    assert leader.high_watermark == 0
    assert not leader.record_follower_fetch(2, 5, NOW)
    assert leader.record_follower_fetch(3, 3, NOW)
    assert leader.high_watermark == 3
    leader.record_follower_fetch(3, 5, NOW)
    assert leader.high_watermark == 5


def test_high_watermark_never_moves_back(leader: Partition) -> None:
    append(leader, 4)
    leader.record_follower_fetch(2, 4, NOW)
    leader.record_follower_fetch(3, 4, NOW)
    assert leader.high_watermark == 4
    leader.make_leader(registration(isr=(1, 2, 3), partition_epoch=1), now_ms=NOW)
    leader.record_follower_fetch(2, 1, NOW)
    assert leader.high_watermark == 4


def test_follower_outside_the_isr_does_not_hold_the_high_watermark(leader: Partition) -> None:
    leader.make_leader(registration(isr=(1, 2), partition_epoch=1), now_ms=NOW)
    append(leader, 3)
    leader.record_follower_fetch(2, 3, NOW)
    assert leader.high_watermark == 3


def test_acks_all_below_min_insync_replicas_is_refused_before_appending(leader: Partition) -> None:
    leader.min_insync_replicas = 2
    leader.make_leader(registration(isr=(1,), partition_epoch=1), now_ms=NOW)
    with pytest.raises(NotEnoughReplicas):
        append(leader, acks=-1)
    assert leader.log_end_offset == 0
    append(leader, acks=1)
    assert leader.log_end_offset == 1


# -- ISR shrink and expansion -------------------------------------------------------------

def test_lagging_follower_is_proposed_out_of_the_isr(leader: Partition) -> None:
    append(leader, 2)
    leader.record_follower_fetch(2, 2, NOW + 1_000)
    leader.record_follower_fetch(3, 0, NOW + 1_000)
    assert leader.isr_shrink(NOW + LAG_MS, LAG_MS) is None
    assert leader.isr_shrink(NOW + LAG_MS + 1, LAG_MS) == (1, 2)


def test_one_isr_change_at_a_time(leader: Partition) -> None:
    leader.alter_partition_item((1, 2), {})
    assert leader.maximal_isr == (1, 2, 3)
    assert leader.isr_shrink(NOW + 10 * LAG_MS, LAG_MS) is None


def test_follower_rejoins_once_past_the_hw_and_the_epoch_start(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path / "t-0", "t", 0, LogConfig.from_overrides({}), now_ms=NOW)
    log.append_as_leader(batch([b"old"] * 4), 0, NOW)
    partition = Partition(1, "t", 0, uuid.uuid4(), log)
    partition.make_leader(registration(isr=(1,), leader_epoch=1), now_ms=NOW)
    assert partition.leader_epoch_start_offset == 4
    partition.record_follower_fetch(2, 3, NOW)
    assert partition.isr_expansion(2) is None          # not yet at the epoch start
    partition.record_follower_fetch(2, 4, NOW)
    assert partition.isr_expansion(2, lambda b: b != 2) is None  # fenced / shutting down
    assert partition.isr_expansion(2) == (1, 2)
    log.close()


def test_committed_answer_replaces_the_isr_and_can_move_the_hw(leader: Partition) -> None:
    append(leader, 3)
    leader.record_follower_fetch(2, 3, NOW)
    leader.alter_partition_item((1, 2), {})
    retry = leader.on_alter_partition_result(0, 0, {
        "partition_index": 0, "error_code": 0, "leader_id": 1, "leader_epoch": 0,
        "isr": [1, 2], "partition_epoch": 1})
    assert not retry
    assert leader.isr == (1, 2) and leader.partition_epoch == 1 and leader.pending_isr is None
    assert leader.high_watermark == 3


@pytest.mark.parametrize("code, retried", [
    (ErrorCode.INVALID_UPDATE_VERSION, False), (ErrorCode.FENCED_LEADER_EPOCH, False),
    (ErrorCode.INELIGIBLE_REPLICA, False), (ErrorCode.OPERATION_NOT_ATTEMPTED, True),
    (ErrorCode.UNKNOWN_SERVER_ERROR, True)])
def test_refused_proposals_wait_for_metadata_and_others_retry(leader: Partition, code: int,
                                                             retried: bool) -> None:
    leader.alter_partition_item((1, 2), {})
    result = {"partition_index": 0, "error_code": int(code)}
    assert leader.on_alter_partition_result(0, 0, result) is retried
    assert (leader.pending_isr is not None) is retried
    assert leader.isr == (1, 2, 3)


def test_a_refused_expansion_stops_holding_the_high_watermark_back(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path / "t-0", "t", 0, LogConfig.from_overrides({}), now_ms=NOW)
    partition = Partition(1, "t", 0, uuid.uuid4(), log)
    partition.make_leader(registration(isr=(1, 2)), now_ms=NOW)
    append(partition, 3)
    partition.record_follower_fetch(2, 3, NOW)
    partition.record_follower_fetch(3, 3, NOW)
    assert partition.high_watermark == 3
    partition.alter_partition_item(partition.isr_expansion(3) or (), {})
    append(partition, 2)
    partition.record_follower_fetch(2, 5, NOW)
    assert partition.high_watermark == 3  # follower 3, being added, counts
    partition.on_alter_partition_result(0, 0, {"partition_index": 0,
                                               "error_code": int(ErrorCode.INELIGIBLE_REPLICA)})
    # No follower's position changes after the refusal; the HW moves all the same.
    assert partition.pending_isr is None and partition.high_watermark == 5
    log.close()


def test_answer_to_an_outdated_proposal_is_ignored(leader: Partition) -> None:
    leader.alter_partition_item((1, 2), {})
    leader.make_leader(registration(isr=(1, 3), partition_epoch=1), now_ms=NOW)
    assert leader.pending_isr is None
    assert not leader.on_alter_partition_result(0, 0, {
        "partition_index": 0, "error_code": 0, "leader_id": 1, "leader_epoch": 0,
        "isr": [1, 2], "partition_epoch": 1})
    assert leader.isr == (1, 3)


# -- follower truncation ------------------------------------------------------------------

@pytest.mark.parametrize("local, epoch, leader_end, leo, expected", [
    ((0, 2), 0, 1, 2, 1),      # same epoch, the leader's copy is shorter
    ((0, 5), 0, 9, 7, 5),      # same epoch, ours ends first (a later epoch of ours follows)
    ((0, 10), 2, 10, 12, 10),  # we do not know the leader's epoch: cut at our earlier end
    ((-1, -1), 3, 4, 9, 4),    # no epoch of ours at or below it: keep what the leader has
])
def test_divergence_truncation_offset(local: tuple[int, int], epoch: int, leader_end: int,
                                      leo: int, expected: int) -> None:
    assert divergence_truncation_offset(local, epoch, leader_end, leo) == expected
