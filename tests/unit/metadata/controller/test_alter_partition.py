"""AlterPartition: ISR changes from the leader, with every rejection Kafka defines."""

from __future__ import annotations

from typing import Any

import pytest

from clients.protocol import ApiKey, ErrorCode, as_message
from clients.protocol.messages.alter_partition import (
    AlterPartitionRequestData,
    AlterPartitionResponseData,
)
from metadata.controller.alter_partition import alter_partition
from tests.unit.metadata.controller.harness import Cluster


@pytest.fixture
def cluster() -> Cluster:
    c = Cluster()
    c.add_brokers(1, 2, 3)
    c.create_topic("t", assignments=[{"partition_index": 0, "broker_ids": [1, 2, 3]}], num_partitions=-1, replication_factor=-1)
    return c


def request(c: Cluster, *, broker_id: int = 1, isr: list[int], leader_epoch: int | None = None,
            partition_epoch: int | None = None, by_name: bool = False, partition: int = 0,
            epochs: dict[int, int] | None = None, recovery: int = 0) -> dict[str, Any]:
    topic = c.image.topic("t")
    part = topic.partitions[0]
    reg = c.image.broker(broker_id)
    entry = {
        "partition_index": partition,
        "leader_epoch": part.leader_epoch if leader_epoch is None else leader_epoch,
        "new_isr_with_epochs": [{"broker_id": b, "broker_epoch": (epochs or {}).get(b, c.image.broker(b).epoch if c.image.broker(b) else -1)} for b in isr],
        "leader_recovery_state": recovery,
        "partition_epoch": part.partition_epoch if partition_epoch is None else partition_epoch,
    }
    t = {"topic_name": "t", "partitions": [entry]} if by_name else {"topic_id": topic.topic_id, "partitions": [entry]}
    return {"broker_id": broker_id, "broker_epoch": reg.epoch if reg else -1, "topics": [t]}


def typed(req: dict[str, Any]) -> AlterPartitionRequestData:
    """`req` as the controller reads it: by topic name (v1, the ISR by broker id), else v3."""
    if any("topic_name" in t for t in req["topics"]):
        for t in req["topics"]:
            for entry in t["partitions"]:
                with_epochs = entry.pop("new_isr_with_epochs", None)
                if with_epochs is not None:
                    entry["new_isr"] = [b["broker_id"] for b in with_epochs]
        return as_message(ApiKey.ALTER_PARTITION, 1, req)
    return as_message(ApiKey.ALTER_PARTITION, 3, req)


def part_result(response: AlterPartitionResponseData) -> AlterPartitionResponseData.PartitionData:
    assert response.error_code == 0
    return response.topics[0].partitions[0]


def test_shrink_and_expand_bump_partition_epoch(cluster: Cluster) -> None:
    records, response = alter_partition(cluster.image, typed(request(cluster, isr=[1, 2])), cluster.now_ms)
    result = part_result(response)
    assert result.error_code == 0 and result.isr == [1, 2] and result.partition_epoch == 1
    assert result.leader_id == 1 and result.leader_epoch == 0
    cluster.commit(records)
    part = cluster.image.topic("t").partitions[0]
    assert part.isr == (1, 2) and part.partition_epoch == 1 and part.leader_epoch == 0
    records, response = alter_partition(cluster.image, typed(request(cluster, isr=[1, 2, 3])), cluster.now_ms)
    assert part_result(response).partition_epoch == 2
    cluster.commit(records)
    assert cluster.image.topic("t").partitions[0].isr == (1, 2, 3)


def test_legacy_new_isr_by_topic_name(cluster: Cluster) -> None:
    req = request(cluster, isr=[1], by_name=True)
    entry = req["topics"][0]["partitions"][0]
    entry["new_isr"] = [b["broker_id"] for b in entry.pop("new_isr_with_epochs")]
    records, response = alter_partition(cluster.image, typed(req), cluster.now_ms)
    assert len(records) == 1 and part_result(response).isr == [1]
    assert response.topics[0].topic_name == "t"


def test_no_change_writes_nothing(cluster: Cluster) -> None:
    records, response = alter_partition(cluster.image, typed(request(cluster, isr=[1, 2, 3])), cluster.now_ms)
    assert records == [] and part_result(response).partition_epoch == 0


def code_of(cluster: Cluster, req: dict[str, Any]) -> int:
    records, response = alter_partition(cluster.image, typed(req), cluster.now_ms)
    assert records == []
    if response.error_code:
        return response.error_code
    return response.topics[0].partitions[0].error_code


def test_stale_broker_epoch(cluster: Cluster) -> None:
    req = request(cluster, isr=[1, 2])
    req["broker_epoch"] -= 1
    assert code_of(cluster, req) == ErrorCode.STALE_BROKER_EPOCH


def test_fenced_leader_epoch(cluster: Cluster) -> None:
    assert code_of(cluster, request(cluster, isr=[1, 2], leader_epoch=5)) == ErrorCode.FENCED_LEADER_EPOCH


def test_partition_epoch_mismatch(cluster: Cluster) -> None:
    assert code_of(cluster, request(cluster, isr=[1, 2], partition_epoch=3)) == ErrorCode.INVALID_UPDATE_VERSION


def test_requester_not_leader(cluster: Cluster) -> None:
    assert code_of(cluster, request(cluster, broker_id=2, isr=[2, 3])) == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_ineligible_replicas(cluster: Cluster) -> None:
    records, response = alter_partition(cluster.image, typed(request(cluster, isr=[1, 2])), cluster.now_ms)
    cluster.commit(records)
    cluster.heartbeat(3, want_fence=True)
    assert code_of(cluster, request(cluster, isr=[1, 2, 3])) == ErrorCode.INELIGIBLE_REPLICA


def test_controlled_shutdown_member_is_ineligible(cluster: Cluster) -> None:
    records, _ = alter_partition(cluster.image, typed(request(cluster, isr=[1, 2])), cluster.now_ms)
    cluster.commit(records)
    cluster.heartbeat(3, want_shut_down=True)
    assert code_of(cluster, request(cluster, isr=[1, 2, 3])) == ErrorCode.INELIGIBLE_REPLICA


def test_stale_member_epoch_is_ineligible(cluster: Cluster) -> None:
    epoch3 = cluster.image.broker(3).epoch
    assert code_of(cluster, request(cluster, isr=[1, 3], epochs={3: epoch3 - 1})) == ErrorCode.INELIGIBLE_REPLICA


@pytest.mark.parametrize("isr", [[], [1, 1], [1, 4], [2, 3]], ids=["empty", "duplicate", "not a replica", "no leader"])
def test_malformed_isr_is_invalid_request(cluster: Cluster, isr: list[int]) -> None:
    req = request(cluster, isr=[1])
    req["topics"][0]["partitions"][0]["new_isr_with_epochs"] = [{"broker_id": b, "broker_epoch": -1} for b in isr]
    assert code_of(cluster, req) == ErrorCode.INVALID_REQUEST


def test_recovering_state_rules(cluster: Cluster) -> None:
    # A recovered partition cannot go back to recovering.
    assert code_of(cluster, request(cluster, isr=[1], recovery=1)) == ErrorCode.INVALID_REQUEST


def test_unknown_topic_and_partition(cluster: Cluster) -> None:
    import uuid

    req = request(cluster, isr=[1])
    req["topics"][0]["topic_id"] = uuid.uuid4()
    assert code_of(cluster, req) == ErrorCode.UNKNOWN_TOPIC_ID
    req = request(cluster, isr=[1], by_name=True)
    req["topics"][0]["topic_name"] = "nope"
    assert code_of(cluster, req) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert code_of(cluster, request(cluster, isr=[1], partition=5)) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
