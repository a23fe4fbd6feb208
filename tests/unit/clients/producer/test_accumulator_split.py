"""Splitting a batch the broker refused as too large (RecordAccumulator.split)."""

from __future__ import annotations

import uuid

from clients.common.cluster import BrokerNode, ClusterMetadata, PartitionInfo, TopicInfo
from clients.producer.accumulator import RecordAccumulator
from clients.producer.future import DeliveryFuture
from clients.records.batch import decode_batch

CLUSTER = ClusterMetadata(
    brokers={1: BrokerNode(1, "127.0.0.1", 9092)},
    topics={"t": TopicInfo("t", uuid.UUID(int=1), 0,
                           False, {0: PartitionInfo("t", 0, 1, 0, (1,), (1,))})})


def test_split_isolates_the_big_record_and_keeps_order_futures_and_queue_place() -> None:
    acc = RecordAccumulator(batch_size=16384, linger_ms=0, compression=0,
                            guarantee_order=True)
    values = [b"ok1", b"x" * 8000, b"ok2", b"ok3"]
    futures = [DeliveryFuture() for _ in values]
    for i, (value, future) in enumerate(zip(values, futures)):
        batch, _ = acc.append("t", 0, 1000 + i, b"k", value, (("h", b"v"),), future, 0.0)
    batch.in_flight = True
    later, _ = acc.append("t", 0, 2000, None, b"later", (), DeliveryFuture(), 0.0)
    assert later is not batch  # the in-flight batch takes no more records

    parts = acc.split(batch)

    assert [[f for f, _, _ in p.futures] for p in parts] == [
        [futures[0]], [futures[1]], [futures[2], futures[3]]]
    decoded = [decode_batch(p.builder.build()).records for p in parts]
    assert [[r.value for r in records] for records in decoded] == [
        [b"ok1"], [b"x" * 8000], [b"ok2", b"ok3"]]
    assert decoded[2][1].timestamp == 1003 and decoded[2][1].headers == (("h", b"v"),)
    assert [d for p in parts for _, d, _ in p.futures] == [0, 0, 0, 1]
    assert list(acc) == [*parts, later]
    assert all(p.builder.is_closed and not p.in_flight for p in parts)


def test_a_split_batch_is_sent_without_lingering_again() -> None:
    acc = RecordAccumulator(batch_size=1000, linger_ms=60000, compression=0,
                            guarantee_order=False)
    for value in (b"a" * 60, b"b" * 60):
        batch, _ = acc.append("t", 0, 0, None, value, (), DeliveryFuture(), 0.0)
    [refused] = acc.drain(CLUSTER, 1, 1 << 20, 0.0, flushing=True)
    first, second = acc.split(refused)
    assert acc.drain(CLUSTER, 1, 1 << 20, 1.0, flushing=False) == [first]
    acc.complete(first)
    assert acc.drain(CLUSTER, 1, 1 << 20, 2.0, flushing=False) == [second]
