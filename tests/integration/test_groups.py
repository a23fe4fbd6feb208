"""Consumer groups on a real three-node cluster started as scripts/bootstrap-quorum starts
it: real clients, offsets in a replicated `__consumer_offsets`, and `raftka groups`."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from cluster.launcher import ClusterInfo
from tests.integration.quorum_helpers import (
    CONSUMER,
    produce,
    start_cluster,  # noqa: F401  (fixture)
    wait_for,
)

pytestmark = pytest.mark.slow

NODES = 3
GROUP_SETTINGS = {"group.initial.rebalance.delay.ms": "0",
                  "offsets.topic.replication.factor": str(NODES),
                  "offsets.topic.num.partitions": "6",
                  "group.min.session.timeout.ms": "1000",
                  # Kafka's defaults, instead of start_cluster's short fencing timings.
                  "broker.session.timeout.ms": "9000",
                  "broker.heartbeat.interval.ms": "2000"}


@pytest.fixture
def cluster(start_cluster) -> ClusterInfo:
    return start_cluster(nodes=NODES, overrides=GROUP_SETTINGS, timeout=60).info


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, NODES)])
    futures[name].result(60)


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

    wait_for(balanced, 60, "two partitions per consumer", interval=0)
    wait_for(lambda: _poll(consumers, seen) or set(first_values) <= set(seen), 60,
             "every record of the first batch", interval=0)
    for consumer in consumers:
        consumer.commit(asynchronous=False)
    consumers[0].close()
    rest = consumers[1:]
    later: list[bytes] = []

    def covered() -> bool:
        _poll(rest, later)
        return sorted(p.partition for c in rest for p in c.assignment()) == list(range(6))

    wait_for(covered, 60, "the two remaining consumers covering all six partitions",
             interval=0)
    second_values = [b"b%d" % i for i in range(30)]
    produce(bootstrap, "six", second_values, 6)
    wait_for(lambda: _poll(rest, later) or set(second_values) <= set(later), 60,
             "every record of the second batch", interval=0)
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


def raftka_groups(*args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "broker.cli.main", "groups", *args],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == code, done.stderr
    return done


def table(out: str, group: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if line.startswith(f"{group} ")]


def test_groups_cli_shows_true_lag_and_reset_moves_consumption(cluster):
    from confluent_kafka import Consumer, Producer, TopicPartition

    bootstrap = cluster.bootstrap_servers
    servers = ("--bootstrap-server", bootstrap)
    create_topic(bootstrap, "lagging", 1)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(8):  # one second apart from 2023-11-14T22:13:20Z
        producer.produce("lagging", value=b"%d" % i, timestamp=1_700_000_000_000 + 1000 * i)
    assert producer.flush(60) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cli", **CONSUMER})
    consumer.commit(offsets=[TopicPartition("lagging", 0, 3)], asynchronous=False)
    consumer.close()
    assert "cli" in raftka_groups(*servers, "--list").stdout.split()
    described = raftka_groups(*servers, "--describe", "--group", "cli")
    assert table(described.stdout, "cli") == [["cli", "lagging", "0", "3", "8", "5", "-", "-",
                                               "-"]]
    assert "Consumer group 'cli' has no active members." in described.stderr
    # --to-datetime finds the first record at or after the time; --dry-run commits nothing.
    dry = raftka_groups(*servers, "--reset-offsets", "--group", "cli", "--topic", "lagging",
                        "--to-datetime", "2023-11-14T22:13:24.500Z", "--dry-run").stdout
    assert table(dry, "cli") == [["cli", "lagging", "0", "5"]]
    shifted = raftka_groups(*servers, "--reset-offsets", "--group", "cli", "--topic",
                            "lagging", "--shift-by", "-2", "--dry-run").stdout
    assert table(shifted, "cli") == [["cli", "lagging", "0", "1"]]
    raftka_groups(*servers, "--reset-offsets", "--group", "cli", "--topic", "lagging",
                  "--to-offset", "6", "--execute")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cli",
                         "client.id": "cli-member", **CONSUMER})
    consumer.subscribe(["lagging"])
    first = wait_for(lambda: (m := consumer.poll(0.2)) is not None and not m.error() and m,
                     60, "a record after the reset", interval=0)
    assert first.offset() == 6
    consumer.commit(asynchronous=False)

    # While the member is active: its id, host and client id in every view; no reset, no delete.
    member = wait_for(lambda: consumer.poll(0.1) is None and consumer.memberid(), 60,
                      "the member id", interval=0)
    described = raftka_groups(*servers, "--describe", "--group", "cli").stdout
    assert table(described, "cli") == [["cli", "lagging", "0", "7", "8", "1", member,
                                        "/127.0.0.1", "cli-member"]]
    members = raftka_groups(*servers, "--describe", "--group", "cli", "--members").stdout
    assert table(members, "cli") == [["cli", member, "/127.0.0.1", "cli-member", "1"]]
    state = raftka_groups(*servers, "--describe", "--group", "cli", "--state").stdout
    assert table(state, "cli")[0][-3:] == ["range", "Stable", "1"]
    refused = raftka_groups(*servers, "--reset-offsets", "--group", "cli", "--topic", "lagging",
                            "--to-earliest", "--execute", code=1)
    assert "inactive, but the current state is Stable" in refused.stderr
    refused = raftka_groups(*servers, "--delete", "--group", "cli", code=1)
    assert "NON_EMPTY_GROUP" in refused.stderr
    consumer.close()

    deleted = raftka_groups(*servers, "--delete", "--group", "cli").stdout
    assert deleted.strip() == "Deletion of requested consumer groups ('cli') was successful."
    gone = raftka_groups(*servers, "--describe", "--group", "cli")
    assert gone.stderr.strip() == "Error: Consumer group 'cli' does not exist."
    assert "cli" not in raftka_groups(*servers, "--list").stdout.split()
