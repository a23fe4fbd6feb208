"""The producer against stub brokers: batching, routing to leaders, retries, acks."""

from __future__ import annotations

import time

import pytest
import trio

from clients.consumer import parse_fetched_records
from clients.partitioner import partition_for_key
from clients.producer import BlockingProducer, ConfigError, ProducerConfig, open_producer
from clients.clock import monotonic_ms
from clients.producer.core import ProducerCore
from clients.producer.future import DeliveryFuture
from cluster.testing.waiting import wait_for
from clients.protocol import ApiKey, ErrorCode, KafkaError
from tests.unit.clients.net.test_blocking_connection import in_thread
from tests.unit.clients.stub_cluster import StubCluster


def values(cluster: StubCluster, topic: str, partition: int) -> list[bytes | None]:
    parsed = parse_fetched_records(topic, partition, cluster.log(topic, partition), 0)
    return [r.value for r in parsed.records]


async def test_keyed_records_go_to_the_murmur2_partition_on_its_leader(
        nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 2)
    cluster.add_topic("t", leaders=[1, 2, 1, 2])
    async with open_producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0}) as p:
        futures = [await p.send("t", f"v{i}", key=f"k{i}") for i in range(40)]
        results = [await f for f in futures]
    for i, md in enumerate(results):
        assert md.partition == partition_for_key(f"k{i}".encode(), 4)
        assert md.topic == "t"
    for partition in range(4):
        expected = [f"v{i}".encode() for i, md in enumerate(results) if md.partition == partition]
        assert values(cluster, "t", partition) == expected
        offsets = [md.offset for md in results if md.partition == partition]
        assert offsets == list(range(len(offsets)))
    for node_id, broker in cluster.brokers.items():
        for request in broker.requests(ApiKey.PRODUCE):
            for topic in request.body.topic_data:
                for p in topic.partition_data:
                    assert cluster.partitions[("t", p.index)].leader == node_id


async def test_records_are_batched_until_linger_or_flush(nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])
    async with open_producer(bootstrap_servers=cluster.bootstrap, linger_ms=60000) as p:
        futures = [await p.send("t", b"x" * 10, partition=0) for _ in range(100)]
        assert not any(f.done() for f in futures)
        await p.flush()
        assert all(f.succeeded() for f in futures)
    produce = cluster.brokers[1].requests(ApiKey.PRODUCE)
    assert len(produce) == 1
    assert [f.result().offset for f in futures] == list(range(100))


async def test_a_full_batch_is_sent_without_waiting_for_linger(nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])
    async with open_producer(bootstrap_servers=cluster.bootstrap, linger_ms=60000,
                             batch_size=1000) as p:
        first = [await p.send("t", b"y" * 100, partition=0) for _ in range(12)]
        with trio.fail_after(5):
            await first[0]
        assert len(cluster.brokers[1].requests(ApiKey.PRODUCE)) >= 1


async def test_many_batches_of_a_partition_in_flight_land_in_send_order(
        nursery: trio.Nursery) -> None:
    # Five batches of one partition may be in flight at once: they must still reach the
    # broker in the order they were filled, both while sending and from a flushed backlog.
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])
    sent = [f"v{i:04d}".encode() for i in range(600)]
    async with open_producer(bootstrap_servers=cluster.bootstrap, linger_ms=60000,
                             batch_size=120, max_in_flight_requests_per_connection=5) as p:
        futures = [await p.send("t", value, partition=0) for value in sent[:300]]
        await p.flush()      # a backlog of full batches drains five at a time
        futures += [await p.send("t", value, partition=0) for value in sent[300:]]
        await p.flush()
    assert all(f.succeeded() for f in futures)
    assert len(cluster.brokers[1].requests(ApiKey.PRODUCE)) >= 100
    assert values(cluster, "t", 0) == sent
    assert [f.result().offset for f in futures] == list(range(len(sent)))


async def test_requests_started_in_one_scheduling_round_keep_their_drain_order(
        nursery: trio.Nursery) -> None:
    # Requests start from several tasks (a send that starts a batch, an answer that frees a
    # slot, the sender); two started in one scheduling round run in an order trio leaves
    # open, yet a partition's batches must reach the broker in the order they were drained.
    # Without idempotence: with it the broker would refuse a sequence gap and retries would
    # hide a reordering.
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])
    sent: list[bytes] = []
    async with open_producer(bootstrap_servers=cluster.bootstrap, linger_ms=60000,
                             batch_size=120, max_in_flight_requests_per_connection=5,
                             enable_idempotence=False) as p:
        await p.send("t", b"first", partition=0)      # the topic's metadata
        await p.flush()
        sent.append(b"first")
        core = p._core
        for round_ in range(12):
            values_ = [f"r{round_}-{i}".encode() for i in range(12)]
            for value in values_:
                assert core.append("t", value, None, None, 0, None, DeliveryFuture(),
                                   monotonic_ms) is not None
            sent += values_
            drained = [core.sendable(monotonic_ms(), True)[0] for _ in range(2)]
            assert all(1 in ready for ready in drained)
            for ready in drained:          # no checkpoint in between: one scheduling round
                p._start_requests(ready)
            await p.flush()
    assert values(cluster, "t", 0) == sent


async def test_not_leader_refreshes_metadata_and_retries(nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 2)
    cluster.add_topic("t", leaders=[1])

    def move_leader(node_id: int, request: object) -> None:
        # The first produce reaches broker 1 just after leadership moved to broker 2.
        cluster.partitions[("t", 0)].leader = 2

    cluster.on_produce = move_leader
    async with open_producer(bootstrap_servers=cluster.bootstrap, linger_ms=0,
                             retry_backoff_ms=10) as p:
        md = await p.send_and_wait("t", b"hello", partition=0)
    assert md.offset == 0
    assert len(cluster.brokers[1].requests(ApiKey.PRODUCE)) == 1
    assert len(cluster.brokers[2].requests(ApiKey.PRODUCE)) == 1
    assert cluster.metadata_requests >= 2
    assert values(cluster, "t", 0) == [b"hello"]


async def test_non_retriable_error_fails_the_future(nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])
    cluster.produce_errors = [ErrorCode.MESSAGE_TOO_LARGE]
    async with open_producer(bootstrap_servers=cluster.bootstrap, linger_ms=0) as p:
        future = await p.send("t", b"v", partition=0)
        with pytest.raises(KafkaError) as info:
            await future
    assert info.value.code == ErrorCode.MESSAGE_TOO_LARGE


async def test_retries_are_bounded(nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])
    cluster.produce_errors = [ErrorCode.NOT_ENOUGH_REPLICAS] * 3
    async with open_producer(bootstrap_servers=cluster.bootstrap, linger_ms=0, retries=1,
                             retry_backoff_ms=1) as p:
        future = await p.send("t", b"v", partition=0)
        with pytest.raises(KafkaError) as info:
            await future
    assert info.value.code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert len(cluster.brokers[1].requests(ApiKey.PRODUCE)) == 2


async def test_retries_stop_at_delivery_timeout(nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])
    cluster.produce_errors = [ErrorCode.NOT_ENOUGH_REPLICAS] * 100000
    async with open_producer(bootstrap_servers=cluster.bootstrap, linger_ms=0,
                             request_timeout_ms=200, delivery_timeout_ms=600,
                             retry_backoff_ms=20, retry_backoff_max_ms=20) as p:
        started = trio.current_time()
        settled: list = []
        future = await p.send("t", b"v", partition=0,
                              callback=lambda md, err: settled.append((md, err)))
        with trio.fail_after(10), pytest.raises(KafkaError) as info:
            await future
        elapsed = trio.current_time() - started
    assert settled == [(None, info.value)]     # the failure reaches the callback too
    # retries is Kafka's default (2147483647): only delivery.timeout.ms ends them.
    assert info.value.code in (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_ENOUGH_REPLICAS)
    assert 0.6 <= elapsed < 5
    assert len(cluster.brokers[1].requests(ApiKey.PRODUCE)) > 3


async def test_an_unanswered_produce_times_out_and_is_retried(nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])
    answered = cluster.brokers[1].handlers[ApiKey.PRODUCE]
    calls: list[float] = []

    async def first_never_answered(request: object) -> object:
        calls.append(trio.current_time())
        if len(calls) == 1:
            await trio.sleep_forever()
        return answered(request)

    cluster.brokers[1].handlers[ApiKey.PRODUCE] = first_never_answered
    async with open_producer(bootstrap_servers=cluster.bootstrap, linger_ms=0,
                             request_timeout_ms=300, retry_backoff_ms=10) as p:
        with trio.fail_after(10):
            metadata = await p.send_and_wait("t", b"v", partition=0)
    assert metadata.offset == 0 and values(cluster, "t", 0) == [b"v"]
    assert len(calls) == 2 and calls[1] - calls[0] >= 0.3    # request.timeout.ms


async def test_acks_zero_completes_without_an_answer(nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])
    async with open_producer(bootstrap_servers=cluster.bootstrap, acks=0, linger_ms=0) as p:
        md = await p.send_and_wait("t", b"v", partition=0)
        assert md.offset == -1
        # Settled once written: the stub reads it a moment later.
        with trio.fail_after(10):
            while not cluster.brokers[1].requests(ApiKey.PRODUCE):
                await trio.sleep(0.005)
        request = cluster.brokers[1].requests(ApiKey.PRODUCE)[0]
        assert request.body.acks == 0


async def test_unknown_topic_times_out_after_max_block(nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    async with open_producer(bootstrap_servers=cluster.bootstrap, max_block_ms=200) as p:
        with pytest.raises(KafkaError) as info:
            await p.send("missing", b"v")
    assert "not present in metadata" in str(info.value)


async def test_sends_return_while_a_partition_cannot_drain(nursery: trio.Nursery) -> None:
    # A send that starts a batch waits for its backlogged partition only briefly (not
    # linger.ms, not until an answer): with no answer ever coming, sends keep returning.
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])

    async def never_answer(request: object) -> None:
        await trio.sleep_forever()

    # The producer is left by cancellation: flushing what is never answered would hang.
    with trio.CancelScope() as leave:
        async with open_producer(bootstrap_servers=cluster.bootstrap, linger_ms=60000,
                                 batch_size=200) as p:
            await p.partitions_for("t")
            cluster.brokers[1].handlers[ApiKey.PRODUCE] = never_answer
            with trio.fail_after(5):
                futures = [await p.send("t", b"z" * 100, partition=0) for _ in range(40)]
            assert not any(f.done() for f in futures)
            assert len(cluster.brokers[1].requests(ApiKey.PRODUCE)) >= 1
            leave.cancel()
            await trio.lowlevel.checkpoint()
    assert leave.cancelled_caught


async def test_blocking_producer_sends_on_flush(nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 2)
    cluster.add_topic("t", leaders=[2, 1])

    def run() -> list[int]:
        with BlockingProducer({"bootstrap.servers": cluster.bootstrap,
                               "linger.ms": "10000"}) as producer:
            futures = [producer.send("t", f"{i}", partition=i % 2) for i in range(10)]
            assert not any(f.done() for f in futures)
            return [f.get(timeout=5).offset for f in futures]

    offsets = await in_thread(run)
    assert offsets == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert values(cluster, "t", 0) == [b"0", b"2", b"4", b"6", b"8"]


async def test_blocking_producer_sends_full_batches_and_lingered_ones_from_send(
    nursery: trio.Nursery
) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])

    def run() -> tuple[bool, bool]:
        with BlockingProducer({"bootstrap.servers": cluster.bootstrap, "linger.ms": "60000",
                               "batch.size": "1000"}) as producer:
            full = [producer.send("t", b"y" * 100, partition=0) for _ in range(12)]
            # A record started a new batch, so send sent the full one before it (its
            # answer is settled by a later call): the broker gets it with no flush, and
            # only it.
            written = wait_for(lambda: values(cluster, "t", 0), "the full batch written",
                               timeout=5)
            first_batch_sent = 0 < len(written) < len(full)
        with BlockingProducer({"bootstrap.servers": cluster.bootstrap, "linger.ms": "1",
                               "batch.size": "100000"}) as producer:
            lingered = producer.send("t", b"z", partition=0)
            deadline = time.monotonic() + 5
            while not lingered.done() and time.monotonic() < deadline:
                producer.send("t", b"more", partition=0)  # each send checks linger
            return first_batch_sent, lingered.done()

    assert await in_thread(run) == (True, True)


async def test_blocking_close_waits_at_most_its_timeout(nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])
    cluster.produce_errors = [ErrorCode.NOT_ENOUGH_REPLICAS] * 1000

    settled: list = []

    def run() -> tuple[float, BaseException | None]:
        producer = BlockingProducer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0,
                                     "retry.backoff.ms": 60000,
                                     "retry.backoff.max.ms": 60000})
        stuck = producer.send("t", b"v", partition=0,
                              callback=lambda md, err: settled.append((md, err)))
        started = time.monotonic()
        producer.close(timeout=0.3)
        return time.monotonic() - started, stuck.exception() if stuck.done() else None

    took, error = await in_thread(run)
    assert 0.3 <= took < 5
    assert error is not None                 # the record left unsent is failed, not lost
    assert settled == [(None, error)]


def test_config_follows_kafka_names_and_defaults() -> None:
    config = ProducerConfig.from_mapping({"bootstrap.servers": "h:1"})
    assert (config.acks, config.linger_ms, config.batch_size) == (-1, 5, 16384)
    assert config.delivery_timeout_ms == 120000
    assert ProducerConfig.from_mapping({"bootstrap.servers": "h:1", "acks": "1"}).acks == 1
    with pytest.raises(ConfigError, match="acks"):
        ProducerConfig.from_mapping({"bootstrap.servers": "h:1", "acks": "2"})
    with pytest.raises(ConfigError, match="bootstrap.servers"):
        ProducerConfig.from_mapping({})


def test_a_partition_keeps_up_to_max_in_flight_batches_in_flight_as_in_kafka() -> None:
    def in_flight_after_three_batches(max_in_flight: str) -> int:
        config = ProducerConfig.from_mapping({
            "bootstrap.servers": "h:1", "acks": "1", "batch.size": "200", "linger.ms": "0",
            "max.in.flight.requests.per.connection": max_in_flight})
        assert not config.enable_idempotence  # acks=1 turns it off
        core = ProducerCore(config)
        core.topic_ready("t")
        core.apply_metadata({
            "brokers": [{"node_id": 1, "host": "h", "port": 1}],
            "topics": [{"name": "t", "error_code": 0, "partitions": [{
                "partition_index": 0, "leader_id": 1, "leader_epoch": 0, "replica_nodes": [1],
                "isr_nodes": [1], "error_code": 0}]}]}, 0.0)
        for _ in range(3):  # one batch each
            assert core.append("t", b"v" * 150, None, None, 0, None, DeliveryFuture(),
                               0.0) is not None
        return sum(len(batches) for _ in range(3)
                   for batches in core.sendable(0.0, flushing=False)[0].values())

    assert in_flight_after_three_batches("5") == 3
    assert in_flight_after_three_batches("1") == 1


async def test_a_blocking_delivery_callback_may_send(nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])

    def run() -> int:
        with BlockingProducer({"bootstrap.servers": cluster.bootstrap, "acks": "1",
                               "batch.size": "300"}) as producer:
            def resend(metadata: object, error: BaseException | None) -> None:
                if error is None:
                    producer.send("t", b"echo" * 30, partition=0)
            for _ in range(20):
                producer.send("t", b"v" * 120, partition=0, callback=resend)
            producer.flush()  # the records the callbacks send too
        return len(values(cluster, "t", 0))

    assert await in_thread(run) == 40
