"""Heartbeats carrying offline log dirs: the controller moves the broker's duties away
once per newly failed dir, and the broker stays registered and unfenced."""

from __future__ import annotations

import uuid

from tests.unit.metadata.controller.harness import Cluster

DIR_A, DIR_B = uuid.UUID(int=1, version=4), uuid.UUID(int=2, version=4)


def started() -> tuple[Cluster, uuid.UUID]:
    c = Cluster()
    c.add_brokers(1, 2, 3)
    c.create_topic("t", 1, 3, assignments=[{"partition_index": 0, "broker_ids": [1, 2, 3]}],
                   num_partitions=-1, replication_factor=-1)
    return c, c.image.topic("t").topic_id


def test_a_newly_offline_dir_moves_leadership_and_isr_membership_away() -> None:
    c, tid = started()
    assert c.image.partition(tid, 0).leader == 1
    response = c.heartbeat(1, offline_log_dirs=(DIR_A,))
    part = c.image.partition(tid, 0)
    assert (part.leader, part.isr, part.leader_epoch) == (2, (2, 3), 1)
    assert response.is_fenced is False and not c.image.broker(1).fenced


def test_the_same_report_again_changes_nothing() -> None:
    c, tid = started()
    c.heartbeat(1, offline_log_dirs=(DIR_A,))
    before = c.image.offset
    c.now_ms += 500
    c.heartbeat(1, offline_log_dirs=(DIR_A,))
    assert c.image.offset == before


def test_a_second_failed_dir_is_acted_on_again() -> None:
    c, tid = started()
    c.heartbeat(1, offline_log_dirs=(DIR_A,))
    # Broker 1 caught up on its healthy dir and rejoined the ISR, then another dir failed.
    assert c.tracker.report_offline_dirs(1, c.image.broker(1).epoch, (DIR_A,)) == frozenset()
    assert c.tracker.report_offline_dirs(1, c.image.broker(1).epoch, (DIR_A, DIR_B)) == \
        frozenset({DIR_B})


def test_a_new_broker_epoch_starts_with_no_offline_dirs() -> None:
    c, _ = started()
    assert c.tracker.report_offline_dirs(1, 7, (DIR_A,)) == frozenset({DIR_A})
    assert c.tracker.report_offline_dirs(1, 8, (DIR_A,)) == frozenset({DIR_A})


def test_heartbeats_without_offline_dirs_move_nothing() -> None:
    c, tid = started()
    c.heartbeat(1)
    assert c.image.partition(tid, 0).leader == 1
