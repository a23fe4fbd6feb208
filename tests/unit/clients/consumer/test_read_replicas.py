"""The consumer's fetch target under KIP-392: the leader, or the replica it prefers."""

from __future__ import annotations

import uuid

from clients.consumer.config import ConsumerConfig
from clients.consumer.core import ConsumerCore
from clients.consumer.read_replicas import ReadReplicas
from clients.protocol import ErrorCode

TP = ("t", 0)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_preferred_replica_is_used_until_it_expires_or_leaves_the_metadata():
    clock = Clock()
    replicas = ReadReplicas(1000, clock)
    assert replicas.node_for(TP, 1, {1, 2}) == 1
    replicas.update(TP, 2)
    assert replicas.node_for(TP, 1, {1, 2}) == 2
    clock.now = 999
    assert replicas.node_for(TP, 1, {1, 2}) == 2
    clock.now = 1000
    assert replicas.node_for(TP, 1, {1, 2}) == 1
    replicas.update(TP, 2)
    assert replicas.node_for(TP, 1, {1}) == 1 and replicas.node_for(TP, 1, {1, 2}) == 1
    replicas.update(TP, 2)
    replicas.clear_node(2)
    assert replicas.preferred(TP) == -1


def core() -> ConsumerCore:
    consumer = ConsumerCore(ConsumerConfig.from_mapping(
        {"bootstrap.servers": "h:1", "client.rack": "r2", "auto.offset.reset": "earliest"}))
    consumer.apply_metadata({
        "brokers": [{"node_id": n, "host": "h", "port": n} for n in (1, 2)],
        "topics": [{"name": "t", "topic_id": uuid.uuid4(), "error_code": 0, "partitions": [
            {"partition_index": 0, "leader_id": 1, "replica_nodes": [1, 2],
             "isr_nodes": [1, 2], "error_code": 0}]}]}, 0)
    consumer.assign([TP])
    consumer.seek(TP, 5)
    return consumer


def answer(request: dict, **fields: object) -> dict:
    return {"error_code": 0, "responses": [{"topic": "t", "partitions": [
        {"partition_index": 0, "error_code": 0, "high_watermark": 9, "records": b"",
         "preferred_read_replica": -1, **fields}]}]}


def test_the_consumer_names_its_rack_and_follows_the_leaders_preference():
    consumer = core()
    (node, request), = consumer.fetch_requests(100).items()
    assert node == 1 and request["rack_id"] == "r2"
    consumer.handle_fetch(request, answer(request, preferred_read_replica=2))
    consumer.fetch_finished(node)
    (node, request), = consumer.fetch_requests(100).items()
    assert node == 2 and consumer.position(TP) == 5


def test_an_error_from_the_preferred_replica_sends_the_consumer_back_to_the_leader():
    for error in (ErrorCode.OFFSET_OUT_OF_RANGE, ErrorCode.NOT_LEADER_OR_FOLLOWER):
        consumer = core()
        request = consumer.fetch_requests(100)[1]
        consumer.handle_fetch(request, answer(request, preferred_read_replica=2))
        consumer.fetch_finished(1)
        request = consumer.fetch_requests(100)[2]
        consumer.handle_fetch(request, answer(request, error_code=error))
        consumer.fetch_finished(2)
        # Out of range on a follower is no reason to reset the position.
        assert list(consumer.fetch_requests(100)) == [1] and consumer.position(TP) == 5
