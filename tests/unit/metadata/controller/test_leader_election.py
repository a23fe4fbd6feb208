"""ElectLeaders decisions (PREFERRED, UNCLEAN) with Kafka's per-partition errors, and the
automatic rebalance's imbalance threshold."""

from __future__ import annotations

import uuid
from typing import Any

from clients.protocol import ApiKey, ErrorCode
from metadata.controller.leader_election import (
    PREFERRED,
    UNCLEAN,
    elect_leaders,
    imbalanced_brokers,
    rebalance_changes,
)
from metadata.records import NO_LEADER, PartitionChangeRecord
from tests.unit.metadata.controller.harness import Cluster, typed


def cluster() -> tuple[Cluster, uuid.UUID]:
    c = Cluster()
    c.add_brokers(1, 2, 3)
    c.create_topic("t", assignments=[
        {"partition_index": 0, "broker_ids": [1, 2]},
        {"partition_index": 1, "broker_ids": [2, 3]},
    ], num_partitions=-1, replication_factor=-1)
    return c, c.image.topic("t").topic_id


def request(election_type: int, partitions: dict[str, list[int]] | None) -> Any:
    named = None if partitions is None else [
        {"topic": topic, "partitions": ids} for topic, ids in partitions.items()]
    return typed(ApiKey.ELECT_LEADERS, {"election_type": election_type,
                                        "topic_partitions": named, "timeout_ms": 60000})


def codes(response: Any) -> dict[tuple[str, int], int]:
    return {(r.topic, p.partition_id): p.error_code
            for r in response.replica_election_results for p in r.partition_result}


def test_preferred_election_moves_leadership_back_and_reports_each_partition() -> None:
    c, tid = cluster()
    c.commit([PartitionChangeRecord(partition_id=0, topic_id=tid, leader=2)])
    records, response = elect_leaders(c.image, request(PREFERRED, {"t": [0, 1], "gone": [0]}))
    assert records == [PartitionChangeRecord(partition_id=0, topic_id=tid, leader=1)]
    assert response.error_code == ErrorCode.NONE
    assert codes(response) == {("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.ELECTION_NOT_NEEDED,
                               ("gone", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    c.commit(records)
    assert c.image.partition(tid, 0).leader == 1


def test_all_partitions_leave_out_those_needing_no_election() -> None:
    c, tid = cluster()
    c.commit([PartitionChangeRecord(partition_id=0, topic_id=tid, leader=2)])
    records, response = elect_leaders(c.image, request(PREFERRED, None))
    assert codes(response) == {("t", 0): ErrorCode.NONE}
    assert len(records) == 1


def test_preferred_election_needs_the_preferred_replica_live_in_the_isr() -> None:
    c, tid = cluster()
    c.commit([PartitionChangeRecord(partition_id=0, topic_id=tid, leader=2, isr=(2,))])
    records, response = elect_leaders(c.image, request(PREFERRED, {"t": [0]}))
    assert records == []
    assert codes(response) == {("t", 0): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE}


def test_unclean_election_picks_a_live_replica_only_when_there_is_no_leader() -> None:
    c, tid = cluster()
    records, response = elect_leaders(c.image, request(UNCLEAN, {"t": [0]}))
    assert (records, codes(response)) == ([], {("t", 0): ErrorCode.ELECTION_NOT_NEEDED})
    # Broker 1, the only ISR member, is fenced: the partition has no leader.
    c.commit([PartitionChangeRecord(partition_id=0, topic_id=tid, isr=(1,))])
    c.heartbeat(1, want_fence=True)
    assert c.image.partition(tid, 0).leader == NO_LEADER
    records, response = elect_leaders(c.image, request(PREFERRED, {"t": [0]}))
    assert codes(response) == {("t", 0): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE}
    records, response = elect_leaders(c.image, request(UNCLEAN, {"t": [0]}))
    assert codes(response) == {("t", 0): ErrorCode.NONE}
    c.commit(records)
    part = c.image.partition(tid, 0)
    assert (part.leader, part.isr) == (2, (2,))


def test_unclean_election_without_a_live_replica_is_not_available() -> None:
    c, tid = cluster()
    c.heartbeat(1, want_fence=True)
    c.heartbeat(2, want_fence=True)
    assert c.image.partition(tid, 0).leader == NO_LEADER
    records, response = elect_leaders(c.image, request(UNCLEAN, {"t": [0]}))
    assert records == []
    assert codes(response) == {("t", 0): ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE}


def test_an_unknown_election_type_is_an_invalid_request() -> None:
    c, _ = cluster()
    records, response = elect_leaders(c.image, request(5, None))
    assert (records, response.error_code) == ([], ErrorCode.INVALID_REQUEST)


def test_the_rebalance_moves_only_brokers_over_the_imbalance_percentage() -> None:
    c = Cluster()
    c.add_brokers(1, 2, 3)
    c.create_topic("many", assignments=[
        {"partition_index": i, "broker_ids": [1, 2, 3] if i < 4 else [2, 3, 1]}
        for i in range(8)], num_partitions=-1, replication_factor=-1)
    tid = c.image.topic("many").topic_id
    # One of broker 1's four preferred partitions is led elsewhere: 25% imbalance.
    c.commit([PartitionChangeRecord(partition_id=0, topic_id=tid, leader=2)])
    assert imbalanced_brokers(c.image, 10) == {1: 0.25}
    assert rebalance_changes(c.image, 25) == []
    assert rebalance_changes(c.image, 10) == [
        PartitionChangeRecord(partition_id=0, topic_id=tid, leader=1)]
