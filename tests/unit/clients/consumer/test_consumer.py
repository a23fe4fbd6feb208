"""Consumer fetch parsing and the consumer against stub brokers."""

from __future__ import annotations

import gc
import threading
import time

import pytest
import trio

from clients.consumer import (
    BlockingConsumer,
    Consumer,
    ConsumerConfig,
    ConsumerRecord,
    NoOffsetForPartitionError,
    WakeupException,
    parse_fetched_records,
)
from cluster.testing.waiting import wait_for
from clients.consumer.core import ConsumerCore
from clients.records.batch import LOG_APPEND_TIME, Record, encode_batch
from clients.records.control import COMMIT, encode_end_txn_batch
from clients.records.errors import CorruptRecordError
from clients.records.header import stamp_log_append_time, parse_header
from tests.unit.clients.net.test_blocking_connection import in_thread
from tests.unit.clients.stub_cluster import StubCluster


def batch(base: int, count: int, *, prefix: str = "v", gap: int = 1) -> bytes:
    records = [Record(base + i * gap, 1000 + i, f"k{base + i * gap}".encode(),
                      f"{prefix}{base + i * gap}".encode(), (("h", b"x"),))
               for i in range(count)]
    return encode_batch(records, base_offset=base)


# ---- parse_fetched_records ----

def test_records_before_the_fetch_offset_inside_the_first_batch_are_skipped() -> None:
    data = batch(0, 5) + batch(5, 5)
    parsed = parse_fetched_records("t", 0, data, 3)
    assert [r.offset for r in parsed.records] == [3, 4, 5, 6, 7, 8, 9]
    assert parsed.next_offset == 10
    assert not parsed.truncated
    first = parsed.records[0]
    assert (first.key, first.value, first.headers, first.timestamp) == (
        b"k3", b"v3", (("h", b"x"),), 1003)


def test_fetched_records_are_ordinary_immutable_consumer_records() -> None:
    record = parse_fetched_records("t", 2, batch(0, 1), 0).records[0]
    built = ConsumerRecord("t", 2, 0, 1000, 0, b"k0", b"v0", (("h", b"x"),))
    assert type(record) is ConsumerRecord
    assert record == built and hash(record) == hash(built) and repr(record) == repr(built)
    assert record.timestamp_type_name == "CreateTime"
    assert record._replace(offset=5).offset == 5 and record.offset == 0
    with pytest.raises(AttributeError):
        record.offset = 5  # type: ignore[misc]


def test_decoding_a_fetch_runs_no_garbage_collection_and_restores_the_collector() -> None:
    # 5,000 records would otherwise set off a collection every 700 of them; paused, the
    # collector runs at most once, at the first allocation after the decode.
    data = b"".join(batch(base, 1000) for base in range(0, 5000, 1000))
    collections: list[int] = []

    def count(phase: str, info: dict) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.callbacks.append(count)
    try:
        assert gc.isenabled()
        parsed = parse_fetched_records("t", 0, data, 0)
        during = len(collections)
        assert gc.isenabled()
        gc.disable()          # a collector the application turned off stays off
        try:
            parse_fetched_records("t", 0, data, 0)
            assert not gc.isenabled()
        finally:
            gc.enable()
    finally:
        gc.callbacks.remove(count)
    assert len(parsed.records) == 5000 and parsed.next_offset == 5000
    assert during <= 1


def test_partial_trailing_batch_is_ignored() -> None:
    whole = batch(0, 3)
    data = whole + batch(3, 3)[:-7]
    parsed = parse_fetched_records("t", 0, data, 0)
    assert [r.offset for r in parsed.records] == [0, 1, 2]
    assert parsed.next_offset == 3
    assert parsed.truncated
    # Fewer than the 12 bytes of offset and length left over also counts as partial.
    tiny = parse_fetched_records("t", 0, whole + b"\x00" * 5, 0)
    assert tiny.next_offset == 3 and tiny.truncated


def test_only_a_partial_batch_yields_nothing_and_keeps_the_position() -> None:
    parsed = parse_fetched_records("t", 0, batch(7, 4)[:30], 7)
    assert parsed.records == [] and parsed.next_offset == 7 and parsed.truncated


def test_compacted_gaps_and_control_batches_advance_the_position() -> None:
    compacted = batch(0, 3, gap=2)  # offsets 0, 2, 4
    marker = encode_end_txn_batch(COMMIT, producer_id=1, producer_epoch=0,
                                  coordinator_epoch=0, base_offset=5, timestamp=0)
    parsed = parse_fetched_records("t", 0, compacted + marker, 1)
    assert [r.offset for r in parsed.records] == [2, 4]
    assert parsed.next_offset == 6


def test_log_append_time_batches_report_the_broker_time() -> None:
    buf = bytearray(batch(0, 2))
    stamp_log_append_time(buf, 0, parse_header(buf, 0), 99999)
    parsed = parse_fetched_records("t", 0, bytes(buf), 0)
    assert {(r.timestamp, r.timestamp_type) for r in parsed.records} == {(99999, LOG_APPEND_TIME)}


def test_corrupt_batch_raises() -> None:
    data = bytearray(batch(0, 2))
    data[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        parse_fetched_records("t", 0, bytes(data), 0)


# ---- the consumer ----

async def filled_cluster(nursery: trio.Nursery) -> StubCluster:
    cluster = await StubCluster().start(nursery, 2)
    cluster.add_topic("t", leaders=[1, 2])
    for partition in (0, 1):
        cluster.append("t", partition, batch(0, 4, prefix=f"p{partition}-"))
        cluster.append("t", partition, batch(4, 4, prefix=f"p{partition}-"))
    return cluster


async def poll_all(consumer: Consumer, want: int) -> list:
    out: list = []
    with trio.fail_after(10):
        while len(out) < want:
            out += await consumer.poll(200)
    return out


async def test_assign_from_earliest_reads_every_partition_in_order(
        nursery: trio.Nursery) -> None:
    cluster = await filled_cluster(nursery)
    async with Consumer({"bootstrap.servers": cluster.bootstrap,
                         "auto.offset.reset": "earliest"}) as consumer:
        consumer.assign([("t", 0), ("t", 1)])
        records = await poll_all(consumer, 16)
        for partition in (0, 1):
            mine = [r for r in records if r.partition == partition]
            assert [r.offset for r in mine] == list(range(8))
            assert mine[0].value == f"p{partition}-0".encode()
        assert await consumer.position(("t", 0)) == 8


async def test_latest_reset_then_new_records_arrive(nursery: trio.Nursery) -> None:
    cluster = await filled_cluster(nursery)
    async with Consumer(bootstrap_servers=cluster.bootstrap) as consumer:
        consumer.assign([("t", 1)])
        assert await consumer.position(("t", 1)) == 8
        assert await consumer.poll(50) == []
        cluster.append("t", 1, batch(0, 2, prefix="new"))
        records = await poll_all(consumer, 2)
        assert [(r.offset, r.value) for r in records] == [(8, b"new0"), (9, b"new1")]


async def test_seek_and_max_records(nursery: trio.Nursery) -> None:
    cluster = await filled_cluster(nursery)
    async with Consumer(bootstrap_servers=cluster.bootstrap) as consumer:
        consumer.assign([("t", 0)])
        consumer.seek(("t", 0), 5)
        first = await consumer.poll(2000, max_records=2)
        assert [r.offset for r in first] == [5, 6]
        assert await consumer.position(("t", 0)) == 7
        consumer.seek_to_beginning()
        again = await poll_all(consumer, 8)
        assert [r.offset for r in again] == list(range(8))


async def test_max_poll_records_caps_every_poll(nursery: trio.Nursery) -> None:
    cluster = await filled_cluster(nursery)
    async with Consumer(bootstrap_servers=cluster.bootstrap, auto_offset_reset="earliest",
                        max_poll_records=3) as consumer:
        consumer.assign([("t", 0)])
        polls: list[list[int]] = []
        with trio.fail_after(10):
            while sum(map(len, polls)) < 8:
                polls.append([r.offset for r in await consumer.poll(200)])
    assert max(map(len, polls)) == 3
    assert [o for offsets in polls for o in offsets] == list(range(8))


async def test_small_partition_fetch_size_still_makes_progress(nursery: trio.Nursery) -> None:
    cluster = await filled_cluster(nursery)
    size = len(cluster.partitions[("t", 0)].batches[0][1])
    async with Consumer(bootstrap_servers=cluster.bootstrap,
                        max_partition_fetch_bytes=size + 10) as consumer:
        consumer.assign([("t", 0)])
        consumer.seek_to_beginning()
        records = await poll_all(consumer, 8)
        assert [r.offset for r in records] == list(range(8))


async def test_out_of_range_resets_by_policy(nursery: trio.Nursery) -> None:
    cluster = await filled_cluster(nursery)
    async with Consumer(bootstrap_servers=cluster.bootstrap,
                        auto_offset_reset="earliest") as consumer:
        consumer.assign([("t", 0)])
        consumer.seek(("t", 0), 100)
        records = await poll_all(consumer, 8)
        assert records[0].offset == 0
    async with Consumer(bootstrap_servers=cluster.bootstrap,
                        auto_offset_reset="none") as consumer:
        consumer.assign([("t", 0)])
        with pytest.raises(NoOffsetForPartitionError):
            await consumer.poll(100)


async def test_subscribe_needs_a_group_id_and_the_consumers_nursery(
        nursery: trio.Nursery) -> None:
    without_group = Consumer(bootstrap_servers="127.0.0.1:1")
    with pytest.raises(ValueError, match="group.id"):
        without_group.subscribe(["t"])
    await without_group.close()
    not_entered = Consumer(bootstrap_servers="127.0.0.1:1", group_id="g")
    with pytest.raises(RuntimeError, match="async with"):
        not_entered.subscribe(["t"])
    await not_entered.close()
    async with Consumer(bootstrap_servers="127.0.0.1:1", group_id="g") as consumer:
        consumer.assign([("t", 0)])
        with pytest.raises(ValueError, match="mutually exclusive"):
            consumer.subscribe(["t"])


async def test_blocking_consumer_reads_both_partitions(nursery: trio.Nursery) -> None:
    cluster = await filled_cluster(nursery)

    def run() -> list[tuple[int, int]]:
        with BlockingConsumer(bootstrap_servers=cluster.bootstrap,
                              auto_offset_reset="earliest") as consumer:
            assert consumer.partitions_for("t") == [0, 1]
            consumer.assign([("t", 0), ("t", 1)])
            out: list = []
            for _ in range(50):
                out += consumer.poll(200)
                if len(out) >= 16:
                    break
            return sorted((r.partition, r.offset) for r in out)

    assert await in_thread(run) == [(p, o) for p in (0, 1) for o in range(8)]


async def test_wakeup_from_another_thread_raises_in_poll_once(nursery: trio.Nursery) -> None:
    cluster = await filled_cluster(nursery)

    def run() -> None:
        with BlockingConsumer(bootstrap_servers=cluster.bootstrap,
                              auto_offset_reset="earliest") as consumer:
            consumer.assign([("t", 0)])
            consumer.wakeup()                 # no poll in progress: the next one raises
            with pytest.raises(WakeupException):
                consumer.poll(0)
            records: list = []
            wait_for(lambda: records.extend(consumer.poll(100)) or len(records) == 8,
                     "the records after the wakeup")
            assert [r.offset for r in records] == list(range(8))
            # A poll blocked waiting for records is interrupted by a call from another thread.
            waker = threading.Thread(target=lambda: wait_for(
                lambda: consumer._consumer._poll_scope is not None, "a poll in progress")
                and consumer.wakeup())
            waker.start()
            started = time.monotonic()
            with pytest.raises(WakeupException):
                consumer.poll(60_000)
            waker.join()
            assert time.monotonic() - started < 30
            assert consumer.poll(0) == []     # one wakeup, one WakeupException
            assert consumer.position(("t", 0)) == 8

    await in_thread(run)


def test_fetching_runs_one_answer_ahead_and_a_seek_drops_it() -> None:
    core = ConsumerCore(ConsumerConfig.from_mapping({"bootstrap.servers": "x:1"}))
    core.assign([("t", 0)])
    core.seek(("t", 0), 0)
    core.apply_metadata({"brokers": [{"node_id": 1, "host": "h", "port": 1}], "topics": [{
        "name": "t", "error_code": 0, "partitions": [{
            "partition_index": 0, "leader_id": 1, "replica_nodes": [1], "isr_nodes": [1],
            "error_code": 0}]}]}, 0)

    def fetch_offset() -> int | None:
        requests = core.fetch_requests(0)
        if not requests:
            return None
        assert core.fetch_requests(0) == {}     # one Fetch per broker in flight
        return requests[1]["topics"][0]["partitions"][0]["fetch_offset"]

    def answer(offset: int, data: bytes) -> bool:
        core.fetch_finished(1)
        return core.handle_fetch(
            {"topics": [{"topic": "t", "partitions": [{"partition": 0, "fetch_offset": offset}]}]},
            {"error_code": 0, "responses": [{"topic": "t", "partitions": [{
                "partition_index": 0, "error_code": 0, "records": data}]}]})

    assert fetch_offset() == 0 and answer(0, batch(0, 3))
    assert fetch_offset() == 3 and answer(3, batch(3, 2))      # ahead of the first answer
    assert fetch_offset() is None                               # two answers held
    assert core.position(("t", 0)) == 0
    assert [r.offset for r in core.drain(4)] == [0, 1, 2, 3]
    assert core.position(("t", 0)) == 4
    assert fetch_offset() == 5
    assert not answer(4, batch(4, 1))                           # stale: dropped
    core.seek(("t", 0), 1)
    assert not core.has_buffered() and fetch_offset() == 1


def test_a_blocking_consumer_dropped_without_close_ends_its_thread() -> None:
    def helper_threads() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name == "raftka-consumer" and t.is_alive()]

    before = set(helper_threads())
    consumer = BlockingConsumer(bootstrap_servers="127.0.0.1:1")
    started = [t for t in helper_threads() if t not in before]
    assert len(started) == 1
    del consumer
    gc.collect()
    started[0].join(timeout=10)
    assert not started[0].is_alive()


def test_a_new_assignment_keeps_the_pause_of_the_partitions_it_keeps() -> None:
    from clients.consumer.core import ConsumerCore
    core = ConsumerCore(ConsumerConfig.from_mapping({"bootstrap.servers": "h:1"}))
    core.assign([("t", 0), ("t", 1)])
    core.pause([("t", 0), ("t", 1)])
    core.assign([("t", 0), ("t", 2)])      # a cooperative rebalance moved t-1 away
    assert core.paused == [("t", 0)]
    core.assign([])                        # an eager one revokes everything first
    core.assign([("t", 0)])
    assert core.paused == []


def test_consumer_config_defaults() -> None:
    config = ConsumerConfig.from_mapping({"bootstrap.servers": "h:1"})
    assert (config.auto_offset_reset, config.fetch_min_bytes, config.fetch_max_wait_ms,
            config.max_partition_fetch_bytes, config.fetch_max_bytes) == (
        "latest", 1, 500, 1048576, 52428800)
