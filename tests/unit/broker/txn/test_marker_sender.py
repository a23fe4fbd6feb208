"""The marker sender: one WriteTxnMarkers per leader broker, repeated for the partitions not
yet marked (a moved leader, an unreachable broker) until all are; a deleted topic needs none;
a fenced coordinator stops."""

from __future__ import annotations

import uuid

import pytest
import trio

from broker.txn import marker_sender
from broker.txn.marker_sender import MarkerSender, MarkersFenced
from clients.net import KafkaConnectionError
from clients.protocol import ErrorCode
from metadata.delta import apply_records
from metadata.image import MetadataImage
from metadata.records import PartitionChangeRecord, PartitionRecord, TopicRecord

TOPIC_ID = uuid.uuid4()


def image_with(leaders: dict[int, int]) -> MetadataImage:
    records = [TopicRecord(name="out", topic_id=TOPIC_ID)]
    records += [PartitionRecord(partition_id=p, topic_id=TOPIC_ID, replicas=(1, 2, 3),
                                isr=(1, 2, 3), leader=leader, leader_epoch=0, partition_epoch=0)
                for p, leader in leaders.items()]
    return apply_records(MetadataImage.empty(), records)[1]


class ScriptedBrokers:
    """Answers WriteTxnMarkers per broker from `answer(broker, partitions)`."""

    def __init__(self, answer) -> None:
        self.answer = answer
        self.requests: list[tuple[int, dict]] = []

    async def request(self, broker_id: int, api_key: int, body: dict) -> dict:
        assert api_key == 27
        self.requests.append((broker_id, body))
        [marker] = body["markers"]
        codes = self.answer(broker_id, [(t["name"], p) for t in marker["topics"]
                                        for p in t["partition_indexes"]])
        if codes is None:
            raise KafkaConnectionError(f"broker {broker_id} is down")
        return {"markers": [{"producer_id": marker["producer_id"], "topics": [
            {"name": "out", "partitions": [{"partition_index": p, "error_code": c}
                                           for (_, p), c in codes.items()]}]}]}


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(marker_sender, "RETRY_BACKOFF_S", 0.001)
    monkeypatch.setattr(marker_sender, "MAX_RETRY_BACKOFF_S", 0.001)


async def test_one_request_per_leader_broker_with_the_transaction_fields():
    brokers = ScriptedBrokers(lambda b, tps: {tp: 0 for tp in tps})
    image = image_with({0: 1, 1: 2, 2: 1})
    sender = MarkerSender(brokers, lambda: image)  # type: ignore[arg-type]
    await sender.send(7, 3, True, 11, frozenset({("out", 0), ("out", 1), ("out", 2)}))
    by_broker = {b: body["markers"][0] for b, body in brokers.requests}
    assert sorted(by_broker) == [1, 2]
    assert by_broker[1]["topics"] == [{"name": "out", "partition_indexes": [0, 2]}]
    assert (by_broker[1]["producer_id"], by_broker[1]["producer_epoch"],
            by_broker[1]["transaction_result"], by_broker[1]["coordinator_epoch"]) == (7, 3, True, 11)


async def test_retried_until_every_leader_has_it():
    image = [image_with({0: 1, 1: 2})]
    calls = {"n": 0}

    def answer(broker: int, tps):
        calls["n"] += 1
        if broker == 2 and calls["n"] < 4:
            return None  # unreachable for a while
        if broker == 1 and image[0].topic("out").partitions[0].leader == 1:
            # The leader moved: this broker says so, and the metadata follows.
            image[0] = apply_records(image[0], [PartitionChangeRecord(
                partition_id=0, topic_id=TOPIC_ID, leader=3)])[1]
            return {tp: ErrorCode.NOT_LEADER_OR_FOLLOWER for tp in tps}
        return {tp: 0 for tp in tps}

    brokers = ScriptedBrokers(answer)
    sender = MarkerSender(brokers, lambda: image[0])  # type: ignore[arg-type]
    with trio.fail_after(5):
        await sender.send(7, 0, False, 1, frozenset({("out", 0), ("out", 1)}))
    assert 3 in [b for b, _ in brokers.requests]


async def test_a_deleted_topic_needs_no_marker_and_a_fenced_coordinator_stops():
    brokers = ScriptedBrokers(lambda b, tps: {tp: 0 for tp in tps})
    sender = MarkerSender(brokers, lambda: MetadataImage.empty())  # type: ignore[arg-type]
    await sender.send(7, 0, True, 1, frozenset({("gone", 0)}))
    assert brokers.requests == []
    fenced = ScriptedBrokers(
        lambda b, tps: {tp: ErrorCode.TRANSACTION_COORDINATOR_FENCED for tp in tps})
    sender = MarkerSender(fenced, lambda: image_with({0: 1}))  # type: ignore[arg-type]
    with pytest.raises(MarkersFenced):
        await sender.send(7, 0, True, 1, frozenset({("out", 0)}))
