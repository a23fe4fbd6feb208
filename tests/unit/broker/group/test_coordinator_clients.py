"""The coordinator on a real socket, driven by the Kafka protocol and by real clients
(confluent-kafka, kafka-python, aiokafka) against one in-process broker."""

from __future__ import annotations

import time
from typing import Any

import pytest
import trio

from cluster.testing.waiting import wait_for
from clients.protocol import ApiKey, ErrorCode
from tests.unit.broker.group.harness import GroupBroker, running_group_broker

FAST_CONSUMER = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 100,
                 "auto.offset.reset": "earliest", "enable.auto.commit": False}


async def ready(broker: GroupBroker, group: str = "g") -> None:
    """Create `__consumer_offsets` through FindCoordinator and wait until it is loaded."""
    conn = await broker.connect()
    first = await conn.request(ApiKey.FIND_COORDINATOR, {"key": group, "key_type": 0}, 3)
    assert first["error_code"] == ErrorCode.COORDINATOR_NOT_AVAILABLE
    await broker.wait_loaded()
    found = await conn.request(ApiKey.FIND_COORDINATOR, {"key": group, "key_type": 0}, 3)
    assert (found["error_code"], found["node_id"], found["port"]) == (0, 1, broker.port)
    await conn.aclose()


def produce(bootstrap: str, topic: str, count: int, partitions: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        producer.produce(topic, value=b"%d" % i, partition=i % partitions)
    assert producer.flush(10) == 0


async def test_find_coordinator_versions_and_key_types(tmp_path):
    async with running_group_broker(tmp_path) as broker:
        await ready(broker)
        conn = await broker.connect()
        v4 = await conn.request(ApiKey.FIND_COORDINATOR,
                                {"key_type": 0, "coordinator_keys": ["a", "b"]}, 4)
        assert [(c["key"], c["error_code"], c["node_id"]) for c in v4["coordinators"]] == [
            ("a", 0, 1), ("b", 0, 1)]
        # No transactions yet: a non-retriable error with a message, for v3 and v4 alike.
        txn = await conn.request(ApiKey.FIND_COORDINATOR, {"key": "t", "key_type": 1}, 3)
        assert txn["error_code"] == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert not ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.retriable
        assert "does not support transactions" in txn["error_message"]
        txn4 = await conn.request(ApiKey.FIND_COORDINATOR,
                                  {"key_type": 1, "coordinator_keys": ["t1", "t2"]}, 4)
        assert [(c["key"], c["error_code"]) for c in txn4["coordinators"]] == [
            ("t1", ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
            ("t2", ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)]
        assert all("transactions" in c["error_message"] for c in txn4["coordinators"])
        await conn.aclose()


async def test_requests_for_groups_of_partitions_led_elsewhere_get_not_coordinator(tmp_path):
    async with running_group_broker(tmp_path) as broker:
        await ready(broker)
        conn = await broker.connect()
        commit = {"group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "",
                  "topics": [{"name": "__consumer_offsets", "partitions": [
                      {"partition_index": 0, "committed_offset": 42,
                       "committed_metadata": ""}]}]}
        response = await conn.request(ApiKey.OFFSET_COMMIT, commit)
        assert response["topics"][0]["partitions"][0]["error_code"] == 0
        partition = broker.coordinator.engine.partition_for("g")
        await broker.move_leader("__consumer_offsets", partition, 2)
        hb = await conn.request(ApiKey.HEARTBEAT, {"group_id": "g", "generation_id": 1,
                                                   "member_id": "m"})
        assert hb["error_code"] == ErrorCode.NOT_COORDINATOR
        await broker.move_leader("__consumer_offsets", partition, 1)
        await broker.wait_loaded()
        fetched = await conn.request(ApiKey.OFFSET_FETCH, {"group_id": "g", "topics": None}, 7)
        # Reloaded from the log after leadership came back.
        assert fetched["topics"][0]["partitions"][0]["committed_offset"] == 42
        await conn.aclose()


def _poll(consumers: list[Any], into: list[bytes]) -> None:
    for consumer in consumers:
        message = consumer.poll(0.05)
        if message is not None and not message.error():
            into.append(message.value())


def _consume_all(consumers: list[Any], expected: set[bytes], got: list[bytes],
                 timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not expected <= set(got) and time.monotonic() < deadline:
        _poll(consumers, got)


def _three_consumers_share_then_two_take_over(bootstrap: str, strategy: str) -> None:
    from confluent_kafka import Consumer

    produce(bootstrap, "t6", 60, 6)
    consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{strategy}",
                           "partition.assignment.strategy": strategy, **FAST_CONSUMER})
                 for _ in range(3)]
    for consumer in consumers:
        consumer.subscribe(["t6"])

    first: list[bytes] = []

    def balanced() -> bool:
        _poll(consumers, first)
        return [len(c.assignment()) for c in consumers] == [2, 2, 2]

    wait_for(balanced, "three members with two partitions each")
    owned = [{tp.partition for tp in c.assignment()} for c in consumers]
    assert set().union(*owned) == set(range(6))
    # Until the first commit a moved partition may be read twice, never skipped.
    everything = {b"%d" % i for i in range(60)}
    _consume_all(consumers, everything, first)
    assert set(first) == everything
    for consumer in consumers:
        consumer.commit(asynchronous=False)
    consumers[0].close()
    rest = consumers[1:]

    later: list[bytes] = []

    def taken_over() -> bool:
        _poll(rest, later)
        return sorted(p.partition for c in rest for p in c.assignment()) == list(range(6))

    wait_for(taken_over, "the two remaining members covering all six partitions")
    produce(bootstrap, "t6", 30, 6)
    _consume_all(rest, {b"%d" % i for i in range(30)}, later)
    # Everything after the commit arrives exactly once: nothing lost, nothing read again.
    assert sorted(later) == sorted(b"%d" % i for i in range(30))
    for consumer in rest:
        consumer.close()


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
async def test_confluent_consumers_share_partitions_and_take_over(tmp_path, strategy):
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("t6", 6)
        await ready(broker, f"g-{strategy}")
        await trio.to_thread.run_sync(_three_consumers_share_then_two_take_over,
                                      broker.bootstrap, strategy)


def _kafka_python_commit_and_resume(bootstrap: str) -> None:
    from kafka import KafkaConsumer

    def consumer() -> KafkaConsumer:
        return KafkaConsumer("kp", bootstrap_servers=bootstrap, group_id="kp-group",
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             heartbeat_interval_ms=100, session_timeout_ms=6000,
                             consumer_timeout_ms=10000)

    produce(bootstrap, "kp", 10, 2)
    first = consumer()
    seen = []
    for message in first:
        seen.append(message.value)
        if len(seen) == 6:
            break
    first.commit()
    first.close()
    produce(bootstrap, "kp", 4, 2)
    second = consumer()
    rest = []
    for message in second:
        rest.append(message.value)
        if len(seen) + len(rest) == 14:
            break
    second.close()
    assert sorted(seen + rest) == sorted([b"%d" % i for i in range(10)] +
                                         [b"%d" % i for i in range(4)])


async def test_kafka_python_commits_and_a_new_consumer_resumes(tmp_path):
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("kp", 2)
        await ready(broker, "kp-group")
        await trio.to_thread.run_sync(_kafka_python_commit_and_resume, broker.bootstrap)


def _aiokafka_commit_and_resume(bootstrap: str) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer

    async def consume(count: int) -> list[bytes]:
        consumer = AIOKafkaConsumer("ak", bootstrap_servers=bootstrap, group_id="ak-group",
                                    auto_offset_reset="earliest", enable_auto_commit=False,
                                    heartbeat_interval_ms=100, session_timeout_ms=6000)
        await consumer.start()
        values: list[bytes] = []
        deadline = time.monotonic() + 20
        try:
            while len(values) < count:
                assert time.monotonic() < deadline, f"only {values} of {count} records arrived"
                batches = await consumer.getmany(timeout_ms=200)
                for messages in batches.values():
                    values += [m.value for m in messages]
            await consumer.commit()
        finally:
            await consumer.stop()
        return values

    produce(bootstrap, "ak", 8, 1)
    first = asyncio.run(consume(8))
    produce(bootstrap, "ak", 3, 1)
    second = asyncio.run(consume(3))
    assert first == [b"%d" % i for i in range(8)]
    assert second == [b"%d" % i for i in range(3)]  # resumed after the commit


async def test_aiokafka_commits_and_a_new_consumer_resumes(tmp_path):
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("ak", 1)
        await ready(broker, "ak-group")
        await trio.to_thread.run_sync(_aiokafka_commit_and_resume, broker.bootstrap)
