"""Consumer groups on a real three-node cluster started as scripts/bootstrap-quorum starts
it: real clients, offsets in a replicated `__consumer_offsets`, and `raftka groups`."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from broker.launcher import ClusterInfo, LauncherError, bootstrap_quorum, stop_quorum

pytestmark = pytest.mark.slow

NODES = 3
GROUP_SETTINGS = {"group.initial.rebalance.delay.ms": "0",
                  "offsets.topic.replication.factor": str(NODES),
                  "offsets.topic.num.partitions": "6",
                  "group.min.session.timeout.ms": "1000"}
CONSUMER = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 200,
            "auto.offset.reset": "earliest", "enable.auto.commit": False}


def wait_until(probe: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ClusterInfo]:
    info = None
    for _ in range(6):
        try:
            info = bootstrap_quorum(tmp_path / "cluster", nodes=NODES,
                                    base_port=random.randrange(20000, 50000, 1000),
                                    overrides=GROUP_SETTINGS, timeout=60)
            break
        except LauncherError as exc:
            if "already in use" not in str(exc):
                raise
    assert info is not None, "no free port range found"
    try:
        yield info
    finally:
        try:
            for node in sorted(info.nodes, key=lambda n: n.node_id):
                stop_quorum(info.dir, node_id=node.node_id, timeout=30)
        finally:
            stop_quorum(info.dir, kill=True)


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, NODES)])
    futures[name].result(60)


def produce(bootstrap: str, topic: str, values: list[bytes], partitions: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i, value in enumerate(values):
        producer.produce(topic, value=value, partition=i % partitions)
    assert producer.flush(60) == 0


def _poll(consumers: list[Any], into: list[bytes]) -> None:
    for consumer in consumers:
        message = consumer.poll(0.05)
        if message is not None and not message.error():
            into.append(message.value())


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_three_consumers_share_six_partitions_and_two_take_over(cluster, strategy):
    from confluent_kafka import Consumer

    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "six", 6)
    first_values = [b"a%d" % i for i in range(60)]
    produce(bootstrap, "six", first_values, 6)
    consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{strategy}",
                           "partition.assignment.strategy": strategy, **CONSUMER})
                 for _ in range(3)]
    for consumer in consumers:
        consumer.subscribe(["six"])
    seen: list[bytes] = []

    def balanced() -> bool:
        _poll(consumers, seen)
        return [len(c.assignment()) for c in consumers] == [2, 2, 2]

    wait_until(balanced, "two partitions per consumer")
    wait_until(lambda: _poll(consumers, seen) or set(first_values) <= set(seen),
               "every record of the first batch")
    for consumer in consumers:
        consumer.commit(asynchronous=False)
    consumers[0].close()
    rest = consumers[1:]
    later: list[bytes] = []

    def covered() -> bool:
        _poll(rest, later)
        return sorted(p.partition for c in rest for p in c.assignment()) == list(range(6))

    wait_until(covered, "the two remaining consumers covering all six partitions")
    second_values = [b"b%d" % i for i in range(30)]
    produce(bootstrap, "six", second_values, 6)
    wait_until(lambda: _poll(rest, later) or set(second_values) <= set(later),
               "every record of the second batch")
    assert sorted(v for v in later if v.startswith(b"b")) == sorted(second_values)
    for consumer in rest:
        consumer.close()


def test_kafka_python_and_aiokafka_resume_from_their_commits(cluster):
    import asyncio

    from aiokafka import AIOKafkaConsumer
    from kafka import KafkaConsumer

    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "resume", 2)
    produce(bootstrap, "resume", [b"%d" % i for i in range(10)], 2)

    def kafka_python_read(count: int) -> list[bytes]:
        consumer = KafkaConsumer("resume", bootstrap_servers=bootstrap, group_id="kp",
                                 auto_offset_reset="earliest", enable_auto_commit=False,
                                 consumer_timeout_ms=30000)
        values = []
        for message in consumer:
            values.append(message.value)
            if len(values) == count:
                break
        consumer.commit()
        consumer.close()
        return values

    assert len(kafka_python_read(10)) == 10
    produce(bootstrap, "resume", [b"x", b"y"], 2)
    assert sorted(kafka_python_read(2)) == [b"x", b"y"]

    async def aiokafka_read(count: int) -> list[bytes]:
        consumer = AIOKafkaConsumer("resume", bootstrap_servers=bootstrap, group_id="ak",
                                    auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        values: list[bytes] = []
        try:
            while len(values) < count:
                batches = await asyncio.wait_for(consumer.getmany(timeout_ms=500), 60)
                values += [m.value for ms in batches.values() for m in ms]
            await consumer.commit()
        finally:
            await consumer.stop()
        return values

    assert len(asyncio.run(aiokafka_read(12))) == 12
    produce(bootstrap, "resume", [b"z"], 2)
    assert asyncio.run(aiokafka_read(1)) == [b"z"]


def raftka_groups(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "broker.cli.main", "groups", *args],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_groups_cli_shows_true_lag_and_reset_moves_consumption(cluster):
    from confluent_kafka import Consumer, TopicPartition

    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "lagging", 1)
    produce(bootstrap, "lagging", [b"%d" % i for i in range(8)], 1)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cli", **CONSUMER})
    consumer.commit(offsets=[TopicPartition("lagging", 0, 3)], asynchronous=False)
    consumer.close()
    out = raftka_groups("--bootstrap-server", bootstrap, "--describe", "--group", "cli")
    row = next(line.split() for line in out.splitlines() if line.startswith("cli "))
    assert row[1:6] == ["lagging", "0", "3", "8", "5"]
    raftka_groups("--bootstrap-server", bootstrap, "--reset-offsets", "--group", "cli",
                  "--topic", "lagging", "--to-offset", "6", "--execute")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cli", **CONSUMER})
    consumer.subscribe(["lagging"])
    first = wait_until(lambda: (m := consumer.poll(0.2)) is not None and not m.error() and m,
                       "a record after the reset")
    consumer.close()
    assert first.offset() == 6
