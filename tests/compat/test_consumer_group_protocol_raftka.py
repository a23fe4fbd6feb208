"""Raftka's consumer with ``group.protocol=consumer`` (KIP-848) in one group with
librdkafka's: they split the partitions, librdkafka's member leaves, Raftka's takes them
all; seen from the rebalance callbacks, no partition is ever owned by both. Raftka's
member starts alone, so librdkafka's joining makes it revoke half of its partitions. Its
commits (OffsetCommit v9, member id and epoch) and committed-offset reads (OffsetFetch v9)
go through under the member's epoch. Also: a pattern subscription (trio consumer), and a
static member that closes and returns."""

from __future__ import annotations

import re
import threading
from typing import Any, Iterator

import pytest
import trio

from cluster.testing.waiting import wait_for
from clients.consumer import BlockingConsumer, Consumer
from clients.protocol import ApiKey
from tests.compat.cluster import Cluster, running_cluster
from tests.compat.ownership import TP, Ledger, MemberThread, topic_partitions

confluent_kafka = pytest.importorskip("confluent_kafka")

TOPIC = "kip848-mixed"
PARTITIONS = 6
RECORDS_PER_PARTITION = 5
SETTLE_S = 60.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One node; the coordinator asks for heartbeats every 500 ms so the group moves fast."""
    with running_cluster(tmp_path_factory.mktemp("kip848-client"), nodes=1, overrides={
            "group.consumer.heartbeat.interval.ms": "500",
            "group.consumer.session.timeout.ms": "10000"}) as started:
        yield started


class Member(MemberThread):
    """A consumer polling on its own thread until stopped; ``close`` then leaves."""

    def __init__(self, name: str, bootstrap: str, group: str, ledger: Ledger) -> None:
        super().__init__(name, ledger)
        self.bootstrap, self.group = bootstrap, group


class ConfluentMember(Member):
    def run(self, stop: threading.Event) -> None:
        consumer = confluent_kafka.Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": self.group,
            "group.protocol": "consumer", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "broker.address.family": "v4"})
        consumer.subscribe(
            [TOPIC], on_assign=lambda c, parts: self.ledger.assigned(self.name, topic_partitions(parts)),
            on_revoke=lambda c, parts: self.ledger.revoked(self.name, topic_partitions(parts)),
            on_lost=lambda c, parts: self.ledger.revoked(self.name, topic_partitions(parts)))
        try:
            while not stop.is_set():
                consumer.poll(0.1)
        finally:
            consumer.close()


class RaftkaMember(Member):
    """Reads every record it is assigned (auto-committing, also before each revocation);
    on stop commits its positions and reads them back before closing."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.read: set[tuple[int, int]] = set()
        self.committed: dict[TP, int | None] = {}

    def run(self, stop: threading.Event) -> None:
        consumer = BlockingConsumer({
            "bootstrap.servers": self.bootstrap, "group.id": self.group,
            "group.protocol": "consumer", "auto.offset.reset": "earliest"})
        try:
            consumer.subscribe([TOPIC], on_assign=lambda ps: self.ledger.assigned(self.name, ps),
                               on_revoke=lambda ps: self.ledger.revoked(self.name, ps))
            while not stop.is_set():
                for record in consumer.poll(100):
                    self.read.add((record.partition, record.offset))
            consumer.commit()
            self.committed = consumer.committed([(TOPIC, p) for p in range(PARTITIONS)])
        finally:
            consumer.close()


def test_raftka_and_librdkafka_share_a_consumer_protocol_group(cluster: Cluster) -> None:
    cluster.create_topic(TOPIC, PARTITIONS)
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap,
                                         "broker.address.family": "v4"})
    for p in range(PARTITIONS):
        for i in range(RECORDS_PER_PARTITION):
            producer.produce(TOPIC, b"v%d" % i, partition=p)
    assert producer.flush(30) == 0
    ledger = Ledger()
    raftka = RaftkaMember("raftka", cluster.bootstrap, "kip848-mixed", ledger)
    librdkafka = ConfluentMember("librdkafka", cluster.bootstrap, "kip848-mixed", ledger)
    everything = {(TOPIC, p) for p in range(PARTITIONS)}
    try:
        raftka.start()
        wait_for(lambda: raftka.healthy() and ledger.of("raftka") == everything
                 and len(raftka.read) == PARTITIONS * RECORDS_PER_PARTITION,
                 "raftka's member to take and read every partition", SETTLE_S)
        # Joining takes partitions from Raftka's member: it revokes (auto-committing) first.
        librdkafka.start()
        wait_for(lambda: raftka.healthy() and librdkafka.healthy()
                 and len(ledger.of("raftka")) == len(ledger.of("librdkafka")) == 3,
                 "the two members to split the partitions", SETTLE_S)
        librdkafka.stop()
        assert not ledger.of("librdkafka")
        wait_for(lambda: raftka.healthy() and ledger.of("raftka") == everything,
                 "raftka's member to take every partition back", SETTLE_S)
    finally:
        librdkafka.stop()
        raftka.stop()
    assert not ledger.violations, ledger.violations
    assert raftka.committed == {(TOPIC, p): RECORDS_PER_PARTITION for p in range(PARTITIONS)}


def test_raftka_subscribes_by_pattern(cluster: Cluster) -> None:
    """The trio consumer: the coordinator matches the pattern (SubscribedTopicRegex), the
    member resolves the topic ids it is given, and closing leaves the group at once."""
    for name, partitions in (("kip848-re-a", 2), ("kip848-re-b", 1), ("kip848-other", 1)):
        cluster.create_topic(name, partitions)
    wanted = [("kip848-re-a", 0), ("kip848-re-a", 1), ("kip848-re-b", 0)]
    assigned: list[TP] = []

    async def member() -> None:
        async with Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "kip848-re",
                             "group.protocol": "consumer"}) as consumer:
            consumer.subscribe(re.compile("kip848-re-.*"), on_assign=assigned.extend)
            with trio.fail_after(SETTLE_S):
                while sorted(assigned) != wanted:
                    await consumer.poll(100)
            assert sorted(consumer.assignment()) == wanted
            assert len(describe(cluster, "kip848-re")["members"]) == 1

    trio.run(member)
    # Closing left the group (epoch -1): the coordinator has no member to wait out.
    assert describe(cluster, "kip848-re")["members"] == []


def describe(cluster: Cluster, group: str) -> dict[str, Any]:
    answer = cluster.request(ApiKey.CONSUMER_GROUP_DESCRIBE, {
        "group_ids": [group], "include_authorized_operations": False})
    (described,) = answer["groups"]
    assert described["error_code"] == 0, described
    return described


def test_a_static_member_that_restarts_keeps_its_partitions(cluster: Cluster) -> None:
    """Closing a static member sends epoch -2: the coordinator keeps its partitions for
    it (the other member gets none of them) and hands them back when it returns."""
    topic = "kip848-static"
    cluster.create_topic(topic, 4)
    owned: dict[str, set[TP]] = {"a": set(), "b": set()}

    def member(name: str, instance_id: str | None) -> BlockingConsumer:
        consumer = BlockingConsumer({
            "bootstrap.servers": cluster.bootstrap, "group.id": "kip848-static",
            "group.protocol": "consumer", "group.instance.id": instance_id})
        consumer.subscribe([topic], on_assign=owned[name].update,
                           on_revoke=owned[name].difference_update)
        return consumer

    def polled_until(probe: Any, what: str, *consumers: BlockingConsumer) -> None:
        def step() -> bool:
            for consumer in consumers:
                consumer.poll(20)
            return probe()
        wait_for(step, what, SETTLE_S)

    b = member("b", None)
    a = member("a", "static-a")
    try:
        polled_until(lambda: len(owned["a"]) == len(owned["b"]) == 2, "a 2/2 split", a, b)
        before = set(owned["a"])
        a.close()
        assert owned["a"] == set()     # revoked on close
        # Still a member to the coordinator (a dynamic one would be gone at once).
        assert [m["instance_id"] for m in describe(cluster, "kip848-static")["members"]
                if m["instance_id"]] == ["static-a"]
        a = member("a", "static-a")
        polled_until(lambda: owned["a"] == before, "the static member's partitions back",
                     a, b)
        assert len(owned["b"]) == 2 and not owned["b"] & before
    finally:
        a.close()
        b.close()
