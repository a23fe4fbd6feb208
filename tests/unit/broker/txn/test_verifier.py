"""KIP-890 verification: the local coordinator answers directly, another broker's over
AddPartitionsToTxn v4+ with verify_only; no coordinator is a retriable answer."""

from __future__ import annotations

import uuid

from broker.txn.state_topic import TRANSACTION_STATE_TOPIC, partition_for_transactional_id
from broker.txn.verifier import CoordinatorVerifier
from clients.net import KafkaConnectionError
from clients.protocol import ApiKey, ErrorCode
from metadata.delta import apply_records
from metadata.image import MetadataImage
from metadata.records import PartitionRecord, TopicRecord

TP0, TP1 = ("out", 0), ("out", 1)


class Local:
    class state:
        @staticmethod
        def partition_for(transactional_id: str) -> int:
            return partition_for_transactional_id(transactional_id, 1)

    def verify_partitions(self, transactional_id, producer_id, epoch, partitions):
        return {tp: 0 if tp == TP0 else ErrorCode.INVALID_TXN_STATE for tp in partitions}


class Remote:
    def __init__(self, down: bool = False) -> None:
        self.down = down
        self.sent: list[tuple[int, int, dict]] = []

    async def request(self, broker_id: int, api_key: int, body: dict) -> dict:
        self.sent.append((broker_id, api_key, body))
        if self.down:
            raise KafkaConnectionError("down")
        return {"error_code": 0, "results_by_transaction": [{
            "transactional_id": "t", "topic_results": [{"name": "out", "results_by_partition": [
                {"partition_index": 0, "partition_error_code": ErrorCode.PRODUCER_FENCED},
                {"partition_index": 1, "partition_error_code": 0}]}]}]}


def led_by(leader: int | None) -> MetadataImage:
    if leader is None:
        return MetadataImage.empty()
    topic_id = uuid.uuid4()
    return apply_records(MetadataImage.empty(), [
        TopicRecord(name=TRANSACTION_STATE_TOPIC, topic_id=topic_id),
        PartitionRecord(partition_id=0, topic_id=topic_id, replicas=(1, 2), isr=(1, 2),
                        leader=leader, leader_epoch=0, partition_epoch=0)])[1]


def verifier(leader: int | None, remote: Remote) -> CoordinatorVerifier:
    image = led_by(leader)
    return CoordinatorVerifier(1, Local(), remote, lambda: image)  # type: ignore[arg-type]


async def test_the_local_coordinator_answers_without_a_request():
    remote = Remote()
    assert await verifier(1, remote).verify("t", 5, 0, [TP0, TP1]) == {
        TP0: 0, TP1: ErrorCode.INVALID_TXN_STATE}
    assert remote.sent == []


async def test_another_brokers_coordinator_is_asked_with_verify_only():
    remote = Remote()
    assert await verifier(2, remote).verify("t", 5, 3, [TP0, TP1]) == {
        TP0: ErrorCode.PRODUCER_FENCED, TP1: 0}
    [(broker, api_key, body)] = remote.sent
    assert (broker, api_key) == (2, ApiKey.ADD_PARTITIONS_TO_TXN)
    [txn] = body["transactions"]
    assert (txn["transactional_id"], txn["producer_id"], txn["producer_epoch"],
            txn["verify_only"]) == ("t", 5, 3, True)
    assert txn["topics"] == [{"name": "out", "partitions": [0, 1]}]


async def test_no_reachable_coordinator_is_a_retriable_answer():
    assert await verifier(None, Remote()).verify("t", 5, 0, [TP0]) == {
        TP0: ErrorCode.COORDINATOR_NOT_AVAILABLE}
    assert await verifier(2, Remote(down=True)).verify("t", 5, 0, [TP0]) == {
        TP0: ErrorCode.COORDINATOR_NOT_AVAILABLE}
