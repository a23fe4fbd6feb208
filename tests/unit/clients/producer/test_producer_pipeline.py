"""The producer's pipeline against stub brokers, in Kafka's order: interceptors,
serializers, the partitioner (KIP-480/794), the accumulator bounded by buffer.memory, and
delivery callbacks."""

from __future__ import annotations

import json
import random
import struct
import time
from typing import Any

import pytest
import trio

from clients.consumer import parse_fetched_records
from clients.partitioner import StickyPartitioner, weighted_pick
from clients.producer import (
    BlockingProducer,
    BufferExhaustedError,
    ProducerRecord,
    open_producer,
)
from clients.protocol import ErrorCode
from tests.unit.clients.net.test_blocking_connection import in_thread
from tests.unit.clients.stub_cluster import StubCluster


class Recorder:
    """An interceptor writing down what it sees, in order, into a shared log."""

    def __init__(self, log: list[Any]) -> None:
        self.log = log

    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        self.log.append(("on_send", record.value))
        return ProducerRecord(record.topic, {"wrapped": record.value}, record.key,
                              [("seen", b"1")], record.partition, record.timestamp)

    def on_acknowledgement(self, metadata: Any, error: BaseException | None) -> None:
        self.log.append(("ack", None if metadata is None else metadata.offset,
                         type(error).__name__ if error else None))

    def close(self) -> None:
        self.log.append(("close",))


async def test_pipeline_runs_interceptors_serializers_and_callbacks_in_order(
        nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])
    log: list[Any] = []
    async with open_producer(bootstrap_servers=cluster.bootstrap, linger_ms=0,
                             key_serializer="int", value_serializer="json",
                             interceptor_classes=[Recorder(log)]) as p:
        future = await p.send("t", "v", key=7, partition=0,
                              callback=lambda md, err: log.append(("callback", md.offset, err)))
        await future
    assert log == [("on_send", "v"), ("ack", 0, None), ("callback", 0, None), ("close",)]
    record = parse_fetched_records("t", 0, cluster.log("t", 0), 0).records[0]
    assert record.key == struct.pack(">i", 7)
    assert json.loads(record.value) == {"wrapped": "v"}
    assert record.headers == (("seen", b"1"),)


async def test_a_serializer_failure_reaches_the_interceptors(nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])
    log: list[Any] = []
    async with open_producer(bootstrap_servers=cluster.bootstrap, value_serializer="int",
                             interceptor_classes=[Recorder(log)]) as p:
        with pytest.raises(struct.error):
            await p.send("t", "not an int", partition=0)
    assert ("ack", None, "error") in log


def _exhausting_setup(cluster: StubCluster) -> dict[str, Any]:
    # Every produce fails retriably and retries wait long: the memory stays taken.
    cluster.add_topic("t", leaders=[1])
    cluster.produce_errors = [ErrorCode.NOT_ENOUGH_REPLICAS] * 1000
    return {"bootstrap.servers": cluster.bootstrap, "buffer.memory": 2000,
            "max.block.ms": 300, "retry.backoff.ms": 60000, "linger.ms": 0}


async def test_full_buffer_blocks_trio_send_then_raises(nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    async with open_producer(_exhausting_setup(cluster)) as p:
        with pytest.raises(BufferExhaustedError, match="buffer.memory") as info:
            for _ in range(100):
                started = trio.current_time()
                await p.send("t", b"x" * 100, partition=0)
        assert trio.current_time() - started >= 0.3
        # Kafka's BufferExhaustedException is a TimeoutException.
        assert info.value.code == ErrorCode.REQUEST_TIMED_OUT
        assert p._core.accumulator.buffered_bytes >= 2000
        p._core.abort(RuntimeError("test over"), include_in_flight=True)


async def test_full_buffer_blocks_blocking_send_then_raises(nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    config = _exhausting_setup(cluster)

    def run() -> tuple[int, float]:
        producer = BlockingProducer(config)
        sent = 0
        try:
            with pytest.raises(BufferExhaustedError):
                while True:
                    started = time.monotonic()
                    producer.send("t", b"x" * 100, partition=0)
                    sent += 1
            return sent, time.monotonic() - started
        finally:
            producer.close(timeout=0)

    sent, blocked = await in_thread(run)
    assert 10 <= sent < 100
    assert blocked >= 0.3


async def test_max_block_ms_bounds_the_metadata_and_buffer_waits_together(
        nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    config = {**_exhausting_setup(cluster), "max.block.ms": 1000, "retry.backoff.ms": 50,
              "retry.backoff.max.ms": 60000}

    async def topic_appears(name: str) -> None:
        await trio.sleep(0.6)              # the broker learns of the topic late
        cluster.add_topic(name, leaders=[1])

    def blocking_send() -> float:
        producer = BlockingProducer(config)
        try:
            while producer._core.has_room():
                producer.send("t", b"x" * 100, partition=0)
            trio.from_thread.run_sync(nursery.start_soon, topic_appears, "b")
            started = time.monotonic()
            with pytest.raises(BufferExhaustedError):
                producer.send("b", b"x", partition=0)
            return time.monotonic() - started
        finally:
            producer.close(timeout=0)

    async with open_producer(config) as p:
        while p._core.has_room():
            await p.send("t", b"x" * 100, partition=0)
        nursery.start_soon(topic_appears, "a")
        started = trio.current_time()
        with pytest.raises(BufferExhaustedError):
            await p.send("a", b"x", partition=0)
        waited = trio.current_time() - started
        p._core.abort(RuntimeError("test over"), include_in_flight=True)
    # 1 s in all, not 0.6 s for the metadata and then 1 s more for room.
    assert 1.0 <= waited < 1.4
    assert 1.0 <= await in_thread(blocking_send) < 1.4


async def test_a_full_buffer_sends_lingering_batches_to_make_room(
        nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])
    async with open_producer(bootstrap_servers=cluster.bootstrap, buffer_memory=2000,
                             linger_ms=60000, max_block_ms=10000) as p:
        futures = [await p.send("t", b"x" * 100, partition=0) for _ in range(60)]
        assert futures[0].done()          # sent long before linger.ms, for room
        await p.flush()
    assert p._core.accumulator.buffered_bytes == 0


def test_a_record_larger_than_the_buffer_fails_at_once() -> None:
    async def main() -> None:
        async with trio.open_nursery() as nursery:
            cluster = await StubCluster().start(nursery, 1)
            cluster.add_topic("t", leaders=[1])
            async with open_producer(bootstrap_servers=cluster.bootstrap,
                                     buffer_memory=100) as p:
                with pytest.raises(Exception, match="larger than buffer.memory"):
                    await p.send("t", b"x" * 200, partition=0)
            nursery.cancel_scope.cancel()
    trio.run(main)


# ---- the uniform sticky partitioner ----

def test_adaptive_pick_favours_shorter_queues() -> None:
    rng = random.Random(3)
    picks = [weighted_pick([0, 1], [0, 5], rng) for _ in range(7000)]
    # Weights max+1-queue: 6 and 1.
    assert 5600 < picks.count(0) < 6400
    assert {weighted_pick([4, 5, 6], [2, 2, 2], rng) for _ in range(300)} == {4, 5, 6}


def test_switching_uses_queue_sizes_only_when_adaptive() -> None:
    adaptive = StickyPartitioner(10, rng=random.Random(1))
    adaptive.partition("t", 3)
    current = adaptive._current["t"]
    others = [p for p in range(3) if p != current]
    # One candidate has a long queue: the other wins almost always.
    chosen = []
    for _ in range(200):
        adaptive._current["t"] = current
        adaptive._produced["t"] = 0
        adaptive.record_produced("t", current, 10, 3,
                                 queue_sizes={others[0]: 50, others[1]: 0})
        chosen.append(adaptive._current["t"])
    assert chosen.count(others[1]) > 190
    plain = StickyPartitioner(10, rng=random.Random(1), adaptive=False)
    plain.partition("t", 3)
    seen = set()
    for _ in range(200):
        first = plain._current["t"]
        plain.record_produced("t", first, 10, 3, queue_sizes={0: 50, 1: 50, 2: 50})
        seen.add(plain._current["t"])
    assert seen == {0, 1, 2}


async def test_ignore_keys_partitions_keyed_records_like_keyless(
        nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1, 1, 1, 1])
    async with open_producer(bootstrap_servers=cluster.bootstrap, linger_ms=0,
                             partitioner_ignore_keys=True, batch_size=100000) as p:
        futures = [await p.send("t", b"v", key=b"k%d" % i) for i in range(40)]
        partitions = {(await f).partition for f in futures}
    assert len(partitions) == 1      # sticky, whatever the keys' murmur2 partitions


async def test_availability_timeout_leaves_out_a_stuck_leader(nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 2)
    cluster.add_topic("t", leaders=[1, 2, 1, 2])
    async with open_producer(bootstrap_servers=cluster.bootstrap,
                             partitioner_availability_timeout_ms=100) as p:
        await p.send_and_wait("t", b"v", partition=0)
        core = p._core
        assert core._available("t") == [0, 1, 2, 3]
        core._ready_since[2] = time.monotonic() * 1000 - 1000
        assert core._available("t") == [0, 2]


def test_retry_backoff_grows_exponentially_up_to_the_maximum() -> None:
    from clients.producer.core import retry_backoff_ms
    assert [retry_backoff_ms(a, 100, 1000, 1.0) for a in (1, 2, 3, 4, 5, 9)] == [
        100, 200, 400, 800, 1000, 1000]
    assert retry_backoff_ms(1, 100, 1000, 1.2) == 120
    assert retry_backoff_ms(5, 100, 1000, 1.2) == 1000     # jitter never exceeds the max
    assert retry_backoff_ms(3, 0, 1000, 1.0) == 0


async def test_trio_close_waits_at_most_its_timeout(nursery: trio.Nursery) -> None:
    from clients.producer import ProducerClosedError
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])
    async with open_producer(bootstrap_servers=cluster.bootstrap, linger_ms=50) as p:
        sent = await p.send("t", b"v", partition=0)
        await p.close()                      # no timeout: everything is delivered
        assert sent.succeeded()
        with pytest.raises(ProducerClosedError):
            await p.send("t", b"late", partition=0)
    cluster.produce_errors = [ErrorCode.NOT_ENOUGH_REPLICAS] * 1000
    async with open_producer(bootstrap_servers=cluster.bootstrap, linger_ms=0,
                             retry_backoff_ms=60000, retry_backoff_max_ms=60000) as p:
        stuck = await p.send("t", b"v", partition=0)
        with trio.fail_after(5):
            await p.close(timeout=0.2)
        assert stuck.done() and isinstance(stuck.exception(), ProducerClosedError)
