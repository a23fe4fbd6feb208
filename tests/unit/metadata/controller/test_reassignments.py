"""Partition reassignment decisions (KIP-455): the union replica set with adding/removing,
completion once the ISR holds the target, cancellation, and Kafka's error codes."""

from __future__ import annotations

from typing import Any, Sequence

import pytest

from clients.protocol import ApiKey, ErrorCode, as_message
from clients.protocol.messages.alter_partition import AlterPartitionResponseData
from metadata.controller.alter_partition import alter_partition
from metadata.controller.reassignments import (
    ListResponse,
    alter_partition_reassignments,
    completed_state,
    list_partition_reassignments,
)
from metadata.image import PartitionRegistration
from metadata.records import PartitionChangeRecord
from tests.unit.metadata.controller.harness import Cluster, typed


@pytest.fixture
def cluster() -> Cluster:
    c = Cluster()
    c.add_brokers(1, 2, 3, 4)
    c.create_topic("t", assignments=[{"partition_index": 0, "broker_ids": [1, 2, 3]},
                                     {"partition_index": 1, "broker_ids": [2, 3, 1]}],
                   num_partitions=-1, replication_factor=-1)
    return c


def part(c: Cluster, index: int = 0) -> PartitionRegistration:
    return c.image.topic("t").partitions[index]


def reassign(c: Cluster, targets: dict[tuple[str, int], Sequence[int] | None]
             ) -> dict[tuple[str, int], int]:
    """Run AlterPartitionReassignments, commit its records, return the codes by partition."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, index), replicas in targets.items():
        by_topic.setdefault(topic, []).append(
            {"partition_index": index, "replicas": None if replicas is None else list(replicas)})
    request = {"timeout_ms": 1000,
               "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
    response = c.decide(alter_partition_reassignments(
        c.image, typed(ApiKey.ALTER_PARTITION_REASSIGNMENTS, request)))
    assert response.error_code == ErrorCode.NONE
    return {(t.name, p.partition_index): p.error_code
            for t in response.responses for p in t.partitions}


def expand_isr(c: Cluster, isr: list[int],
               index: int = 0) -> AlterPartitionResponseData.PartitionData:
    """The partition leader's AlterPartition to `isr`, committed; its partition result."""
    p = part(c, index)
    leader = c.image.broker(p.leader)
    request = {"broker_id": p.leader, "broker_epoch": leader.epoch, "topics": [{
        "topic_id": c.image.topic("t").topic_id, "partitions": [{
            "partition_index": index, "leader_epoch": p.leader_epoch,
            "partition_epoch": p.partition_epoch, "leader_recovery_state": 0,
            "new_isr_with_epochs": [{"broker_id": b, "broker_epoch": c.image.broker(b).epoch}
                                    for b in isr]}]}]}
    body = as_message(ApiKey.ALTER_PARTITION, 3, request)
    response = c.decide(alter_partition(c.image, body, c.now_ms))
    result = response.topics[0].partitions[0]
    assert result.error_code == ErrorCode.NONE
    return result


def test_alter_grows_the_replica_set_to_the_union(cluster: Cluster) -> None:
    assert reassign(cluster, {("t", 0): [2, 3, 4]}) == {("t", 0): ErrorCode.NONE}
    p = part(cluster)
    assert p.replicas == (2, 3, 4, 1)
    assert p.adding_replicas == (4,) and p.removing_replicas == (1,)
    assert p.isr == (1, 2, 3) and p.leader == 1  # nothing moves until 4 caught up


def test_isr_holding_the_target_finishes_and_moves_the_removed_leader(cluster: Cluster) -> None:
    reassign(cluster, {("t", 0): [2, 3, 4]})
    epoch = part(cluster).leader_epoch
    result = expand_isr(cluster, [1, 2, 3, 4])
    p = part(cluster)
    assert p.replicas == (2, 3, 4)
    assert p.isr == (2, 3, 4)
    assert p.leader == 2 and p.leader_epoch == epoch + 1
    assert p.adding_replicas == () and p.removing_replicas == ()
    # The old leader learns from the answer that it no longer leads.
    assert result.leader_id == 2 and result.isr == [2, 3, 4]


def test_a_partial_isr_expansion_does_not_finish(cluster: Cluster) -> None:
    reassign(cluster, {("t", 0): [4, 3, 1]})  # target (4, 3, 1): adds 4, removes 2
    p = part(cluster)
    assert p.adding_replicas == (4,) and p.removing_replicas == (2,)
    expand_isr(cluster, [1, 3])  # 2 leaves the ISR: the target still lacks 4
    assert part(cluster).adding_replicas == (4,)
    expand_isr(cluster, [1, 3, 4])
    p = part(cluster)
    assert p.replicas == (4, 3, 1) and p.isr == (1, 3, 4) and p.leader == 1


def test_no_finish_while_no_target_replica_could_lead() -> None:
    moving = PartitionRegistration(replicas=(2, 3, 1), isr=(1, 2, 3), leader=1,
                                   adding_replicas=(), removing_replicas=(1,))
    assert completed_state(moving, moving.isr, eligible=lambda b: False) is None
    assert completed_state(moving, moving.isr, eligible=lambda b: b == 3) == ((2, 3), (2, 3), 3)


def test_the_leader_stays_when_it_is_kept(cluster: Cluster) -> None:
    reassign(cluster, {("t", 0): [1, 4, 3]})
    expand_isr(cluster, [1, 2, 3, 4])
    p = part(cluster)
    assert p.replicas == (1, 4, 3) and p.isr == (1, 3, 4) and p.leader == 1


def test_a_target_already_in_the_isr_finishes_at_once(cluster: Cluster) -> None:
    assert reassign(cluster, {("t", 0): [3, 2]}) == {("t", 0): ErrorCode.NONE}
    p = part(cluster)
    assert p.replicas == (3, 2) and p.isr == (2, 3) and p.leader == 3
    assert p.adding_replicas == () and p.removing_replicas == ()


def test_reordering_only_changes_the_replica_order(cluster: Cluster) -> None:
    reassign(cluster, {("t", 0): [3, 1, 2]})
    p = part(cluster)
    assert p.replicas == (3, 1, 2) and p.leader == 1 and p.adding_replicas == ()


def test_cancel_reverts_to_the_original_replicas(cluster: Cluster) -> None:
    reassign(cluster, {("t", 0): [2, 3, 4]})
    assert reassign(cluster, {("t", 0): None}) == {("t", 0): ErrorCode.NONE}
    p = part(cluster)
    # Kafka's revert keeps the union's order minus the replicas being added.
    assert p.replicas == (2, 3, 1) and p.isr == (1, 2, 3) and p.leader == 1
    assert p.adding_replicas == () and p.removing_replicas == ()


def test_cancel_drops_adding_replicas_from_the_isr_and_leadership(cluster: Cluster) -> None:
    reassign(cluster, {("t", 0): [4, 3]})  # target (4, 3): adds 4, removes 1 and 2
    expand_isr(cluster, [1, 2, 4])  # 4 joined, 3 fell out: not complete
    cluster.commit([PartitionChangeRecord(partition_id=0, topic_id=cluster.image.topic("t").topic_id,
                                          leader=4)])
    reassign(cluster, {("t", 0): None})
    p = part(cluster)
    assert p.replicas == (3, 1, 2) and p.isr == (1, 2) and p.leader == 1


def test_cancel_needing_an_unclean_election_is_refused(cluster: Cluster) -> None:
    tid = cluster.image.topic("t").topic_id
    reassign(cluster, {("t", 0): [4]})
    cluster.commit([PartitionChangeRecord(partition_id=0, topic_id=tid, isr=(4,), leader=4)])
    assert reassign(cluster, {("t", 0): None}) == {
        ("t", 0): ErrorCode.INVALID_REPLICA_ASSIGNMENT}
    assert part(cluster).adding_replicas == (4,)


def test_a_new_target_replaces_the_ongoing_reassignment(cluster: Cluster) -> None:
    reassign(cluster, {("t", 0): [2, 3, 4]})
    reassign(cluster, {("t", 0): [1, 2, 4]})
    p = part(cluster)
    assert p.replicas == (1, 2, 4, 3)
    assert p.adding_replicas == (4,) and p.removing_replicas == (3,)


def test_a_new_target_drops_replicas_still_being_added_that_it_leaves_out(
        cluster: Cluster) -> None:
    reassign(cluster, {("t", 0): [2, 3, 4]})
    expand_isr(cluster, [1, 2])  # 3 fell behind; 4 is not in yet
    reassign(cluster, {("t", 0): [1, 2]})
    p = part(cluster)
    assert p.replicas == (1, 2) and p.isr == (1, 2)
    assert p.adding_replicas == () and p.removing_replicas == ()


@pytest.mark.parametrize(("targets", "code"), [
    ({("t", 0): []}, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    ({("t", 0): [2, 2, 3]}, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    ({("t", 0): [1, 2, 9]}, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    ({("t", 7): [1, 2, 3]}, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ({("gone", 0): [1, 2, 3]}, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ({("t", 0): None}, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS),
])
def test_bad_input_gets_kafkas_code_and_changes_nothing(
        cluster: Cluster, targets: dict, code: int) -> None:
    before = cluster.image
    assert reassign(cluster, targets) == {next(iter(targets)): code}
    assert cluster.image is before


def test_one_bad_partition_does_not_stop_the_others(cluster: Cluster) -> None:
    codes = reassign(cluster, {("t", 0): [1, 1], ("t", 1): [2, 3, 4]})
    assert codes == {("t", 0): ErrorCode.INVALID_REPLICA_ASSIGNMENT, ("t", 1): ErrorCode.NONE}
    assert part(cluster, 1).adding_replicas == (4,)


def test_list_shows_ongoing_reassignments_only(cluster: Cluster) -> None:
    reassign(cluster, {("t", 1): [2, 3, 4]})
    _, everything = list_partition_reassignments(
        cluster.image, typed(ApiKey.LIST_PARTITION_REASSIGNMENTS, {"topics": None}))
    assert everything.topics == [ListResponse.OngoingTopicReassignment(name="t", partitions=[
        ListResponse.OngoingPartitionReassignment(
            partition_index=1, replicas=[2, 3, 4, 1], adding_replicas=[4],
            removing_replicas=[1])])]
    _, named = list_partition_reassignments(
        cluster.image, typed(ApiKey.LIST_PARTITION_REASSIGNMENTS, {"topics": [
            {"name": "t", "partition_indexes": [0]}, {"name": "gone", "partition_indexes": [0]}]}))
    assert named.topics == []


def test_the_reassignment_survives_a_snapshot(cluster: Cluster) -> None:
    from metadata.delta import apply_records
    from metadata.image import MetadataImage

    reassign(cluster, {("t", 0): [2, 3, 4]})
    _, restored = apply_records(MetadataImage.empty(), cluster.image.to_records())
    p = restored.topic("t").partitions[0]
    assert p.adding_replicas == (4,) and p.removing_replicas == (1,)
