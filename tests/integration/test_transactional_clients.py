"""Raftka's own transactional producer (trio and blocking) and aiokafka's pass the same
commit/abort test on a real cluster, read back by Raftka's consumer with each isolation
level; Raftka's producer also runs consume-transform-produce with
send_offsets_to_transaction, and a second producer with the same transactional.id fences
the first."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable, Iterator

import pytest
import trio

from cluster.testing.cluster import RaftkaCluster, start_cluster
from clients.consumer import BlockingConsumer
from clients.producer import BlockingProducer, open_producer
from clients.protocol import ErrorCode, KafkaError

pytestmark = pytest.mark.slow

TXN_SETTINGS = {"transaction_state_log_num_partitions": 3}
COMMITTED = [b"committed-%d" % i for i in range(10)]
ABORTED = [b"aborted-%d" % i for i in range(10)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RaftkaCluster]:
    with start_cluster(tmp_path_factory.mktemp("txn-clients"), 3, **TXN_SETTINGS) as started:
        yield started


def read(cluster: RaftkaCluster, topic: str, isolation: str, expected: int,
         partitions: int = 1, timeout: float = 30.0) -> list[bytes | None]:
    """Values from the start of `topic` with Raftka's consumer, until `expected` arrived or
    the timeout (the caller's assertion then shows what is missing)."""
    with BlockingConsumer({"bootstrap.servers": cluster.bootstrap_servers,
                           "isolation.level": isolation}) as consumer:
        consumer.assign([(topic, p) for p in range(partitions)])
        consumer.seek_to_beginning()
        values: list[bytes | None] = []
        deadline = time.monotonic() + timeout
        while len(values) < expected and time.monotonic() < deadline:
            values += [r.value for r in consumer.poll(200)]
        return values


# -- one scenario, three producers ---------------------------------------------------------

def with_aiokafka(bootstrap: str, topic: str, transactional_id: str) -> None:
    aiokafka = pytest.importorskip("aiokafka")

    async def run() -> None:
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap,
                                             transactional_id=transactional_id)
        await producer.start()
        try:
            async with producer.transaction():
                for value in COMMITTED:
                    await producer.send(topic, value)
            await producer.begin_transaction()
            for value in ABORTED:
                await producer.send(topic, value)
            await producer.flush()
            await producer.abort_transaction()
            async with producer.transaction():
                await producer.send(topic, b"last")
        finally:
            await producer.stop()

    asyncio.run(run())


def with_raftka_trio(bootstrap: str, topic: str, transactional_id: str) -> None:
    async def run() -> None:
        async with open_producer({"bootstrap.servers": bootstrap,
                                  "transactional.id": transactional_id}) as producer:
            await producer.init_transactions()
            await producer.begin_transaction()
            for value in COMMITTED:
                await producer.send(topic, value)
            await producer.commit_transaction()
            await producer.begin_transaction()
            for value in ABORTED:
                await producer.send(topic, value)
            await producer.flush()
            await producer.abort_transaction()
            await producer.begin_transaction()
            await producer.send(topic, b"last")
            await producer.commit_transaction()

    trio.run(run)


def with_raftka_blocking(bootstrap: str, topic: str, transactional_id: str) -> None:
    with BlockingProducer({"bootstrap.servers": bootstrap,
                           "transactional.id": transactional_id}) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        for value in COMMITTED:
            producer.send(topic, value)
        producer.commit_transaction()
        producer.begin_transaction()
        for value in ABORTED:
            producer.send(topic, value)
        producer.flush()
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send(topic, b"last")
        producer.commit_transaction()


@pytest.mark.parametrize("name, run", [("aiokafka", with_aiokafka),
                                       ("raftka-trio", with_raftka_trio),
                                       ("raftka-blocking", with_raftka_blocking)])
def test_commit_is_visible_to_read_committed_and_abort_never(
        cluster: RaftkaCluster, name: str, run: Callable[[str, str, str], None]) -> None:
    topic = f"txn-{name}"
    cluster.create_topic(topic, 1, 3)
    run(cluster.bootstrap_servers, topic, f"commit-abort-{name}")
    assert read(cluster, topic, "read_committed", 11) == COMMITTED + [b"last"]
    assert read(cluster, topic, "read_committed", 12, timeout=2) == COMMITTED + [b"last"]
    assert read(cluster, topic, "read_uncommitted", 21) == COMMITTED + ABORTED + [b"last"]


# -- consume-transform-produce ---------------------------------------------------------

def test_consume_transform_produce_commits_output_and_offsets_together(
        cluster: RaftkaCluster) -> None:
    cluster.create_topic("ctp-in", 2, 3)
    cluster.create_topic("ctp-out", 2, 3)
    bootstrap = cluster.bootstrap_servers
    with BlockingProducer({"bootstrap.servers": bootstrap}) as plain:
        for i in range(100):
            plain.send("ctp-in", b"%d" % i, partition=i % 2)
    group = "ctp-group"
    with BlockingConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                           "enable.auto.commit": False, "auto.offset.reset": "earliest",
                           "isolation.level": "read_committed"}) as consumer, \
            BlockingProducer({"bootstrap.servers": bootstrap,
                              "transactional.id": "ctp"}) as producer:
        producer.init_transactions()
        consumer.subscribe(["ctp-in"])
        done = 0
        rounds = 0
        deadline = time.monotonic() + 60
        while done < 100 and time.monotonic() < deadline:
            records = consumer.poll(500)
            if not records:
                continue
            producer.begin_transaction()
            for r in records:
                producer.send("ctp-out", b"out-" + (r.value or b""), partition=r.partition)
            positions = {tp: consumer.position(tp) for tp in consumer.assignment()}
            producer.send_offsets_to_transaction(positions, consumer.group_metadata())
            if rounds == 1:
                # One round is aborted: its records are read again from the last commit.
                producer.abort_transaction()
                committed = consumer.committed(list(positions))
                for tp in positions:
                    consumer.seek(tp, committed[tp] or 0)
            else:
                producer.commit_transaction()
                done += len(records)
            rounds += 1
    out = read(cluster, "ctp-out", "read_committed", 100, partitions=2)
    assert sorted(out) == sorted(b"out-%d" % i for i in range(100))
    with BlockingConsumer({"bootstrap.servers": bootstrap, "group.id": group}) as check:
        assert check.committed([("ctp-in", 0), ("ctp-in", 1)]) == {("ctp-in", 0): 50,
                                                                    ("ctp-in", 1): 50}


# -- fencing -----------------------------------------------------------------------------

def test_a_second_raftka_producer_with_the_same_id_fences_the_first(
        cluster: RaftkaCluster) -> None:
    cluster.create_topic("txn-fenced", 1, 3)
    config: dict[str, Any] = {"bootstrap.servers": cluster.bootstrap_servers,
                              "transactional.id": "fenced-raftka"}
    with BlockingProducer(config) as zombie, BlockingProducer(config) as successor:
        zombie.init_transactions()
        zombie.begin_transaction()
        zombie.send("txn-fenced", b"from-the-zombie").get(30)
        successor.init_transactions()
        successor.begin_transaction()
        successor.send("txn-fenced", b"from-the-successor")
        successor.commit_transaction()
        zombie.send("txn-fenced", b"late-zombie-write")
        with pytest.raises(KafkaError) as failure:
            zombie.commit_transaction()
        assert failure.value.code == ErrorCode.PRODUCER_FENCED
        with pytest.raises(KafkaError) as again:
            zombie.abort_transaction()
        assert again.value.code == ErrorCode.PRODUCER_FENCED
    assert read(cluster, "txn-fenced", "read_committed", 2, timeout=5) == [b"from-the-successor"]
