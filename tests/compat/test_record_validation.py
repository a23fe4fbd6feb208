"""Kafka's record validation on produce, seen by real clients against a launcher cluster:
keyless records on a compacted topic and timestamps beyond message.timestamp.after.max.ms
are refused per record (ProduceResponse record_errors, KIP-467) with nothing of their batch
appended, and a topic's compression.type makes the leader store batches in its codec."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from clients.protocol import ApiKey
from clients.protocol.errors import ErrorCode
from clients.records.batch import encode_batch
from clients.records.record import Record
from tests.compat.cluster import Cluster
from tests.unit.broker.apis.batches import produce_body

confluent_kafka = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")
aiokafka = pytest.importorskip("aiokafka")

RAFTKA = str(Path(sys.executable).parent / "raftka")
# Long enough that every record of a test lands in one batch.
LINGER_MS = 500
KEYLESS = {1, 3, 4, 8, 11, 12, 15, 17, 19, 20}  # ten of 22 records
HOUR = 3_600_000


def now_ms() -> int:
    return int(time.time() * 1000)


def end_offset(cluster: Cluster, topic: str) -> int:
    answer = cluster.request(ApiKey.LIST_OFFSETS, {
        "replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]},
        port=cluster.port_of(cluster.leader_of(topic)))
    partition = answer["topics"][0]["partitions"][0]
    assert partition["error_code"] == 0
    return int(partition["offset"])


# -- per-client produce of one batch, each record's outcome by its index ---------------------

def confluent_produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, int]],
                      producer: Any = None) -> dict[int, Any]:
    """{index: None or the KafkaError} for `records` as (key, timestamp) sent in one batch."""
    producer = producer or confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "linger.ms": LINGER_MS, "acks": "all",
        "broker.address.family": "v4"})
    outcome: dict[int, Any] = {}
    for index, (key, timestamp) in enumerate(records):
        producer.produce(topic, b"value-%d" % index, key, partition=0, timestamp=timestamp,
                         on_delivery=lambda err, msg, index=index: outcome.__setitem__(index, err))
    assert producer.flush(30) == 0
    return outcome


def kafka_python_produce(bootstrap: str, topic: str,
                         records: list[tuple[bytes | None, int]]) -> dict[int, Exception | None]:
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, linger_ms=LINGER_MS, acks="all")
    try:
        futures = [producer.send(topic, value=b"value-%d" % i, key=key, partition=0,
                                 timestamp_ms=timestamp)
                   for i, (key, timestamp) in enumerate(records)]
        producer.flush(30)
    finally:
        producer.close(10)
    return {i: future.exception for i, future in enumerate(futures)}


def aiokafka_produce(bootstrap: str, topic: str,
                     records: list[tuple[bytes | None, int]]) -> dict[int, Exception | None]:
    async def run() -> dict[int, Exception | None]:
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=LINGER_MS,
                                             acks="all")
        await producer.start()
        try:
            futures = [await producer.send(topic, value=b"value-%d" % i, key=key, partition=0,
                                           timestamp_ms=timestamp)
                       for i, (key, timestamp) in enumerate(records)]
            outcome: dict[int, Exception | None] = {}
            for i, future in enumerate(futures):
                try:
                    await future
                    outcome[i] = None
                except Exception as exc:  # the client's error for this record
                    outcome[i] = exc
            return outcome
        finally:
            await producer.stop()

    return asyncio.run(run())


def mixed_keys() -> list[tuple[bytes | None, int]]:
    stamp = now_ms()
    return [(None if i in KEYLESS else b"key-%d" % i, stamp) for i in range(22)]


# -- compacted topics ----------------------------------------------------------------------

def test_confluent_compacted_topic_fails_exactly_the_keyless_records(cluster: Cluster) -> None:
    topic = "rv-compacted-confluent"
    cluster.create_topic(topic, replication_factor=3, configs={"cleanup.policy": "compact"})
    producer = confluent_kafka.Producer({
        "bootstrap.servers": cluster.bootstrap, "linger.ms": LINGER_MS, "acks": "all",
        "enable.idempotence": True, "broker.address.family": "v4"})
    outcome = confluent_produce(cluster.bootstrap, topic, mixed_keys(), producer)
    codes = {i: err.code() for i, err in outcome.items()}
    assert {i for i, code in codes.items() if code == confluent_kafka.KafkaError.INVALID_RECORD} == KEYLESS
    # librdkafka's error for a record failed with a batch-mate (the batch's refusal).
    assert all(codes[i] == confluent_kafka.KafkaError._INVALID_DIFFERENT_RECORD
               for i in range(22) if i not in KEYLESS)
    assert end_offset(cluster, topic) == 0
    # The same producer goes on: a batch of keyed records only is stored from offset 0.
    keyed = [(b"key-%d" % i, now_ms()) for i in range(5)]
    assert confluent_produce(cluster.bootstrap, topic, keyed, producer) == {i: None for i in range(5)}
    assert end_offset(cluster, topic) == 5


def test_kafka_python_and_aiokafka_get_the_same_refusal(cluster: Cluster) -> None:
    topic = "rv-compacted-python"
    cluster.create_topic(topic, configs={"cleanup.policy": "compact"})
    outcome = kafka_python_produce(cluster.bootstrap, topic, mixed_keys())
    # kafka-python raises the partition's error for each record named in record_errors and
    # a generic KafkaError for its batch-mates.
    assert {i for i, exc in outcome.items()
            if isinstance(exc, kafka.errors.InvalidRecordError)} == KEYLESS
    assert all(type(outcome[i]) is kafka.errors.KafkaError and "batch" in str(outcome[i])
               for i in range(22) if i not in KEYLESS)
    assert "no key" in str(outcome[min(KEYLESS)])
    # aiokafka reads no record_errors: every record fails with the partition's error code
    # (87, which aiokafka 0.14 does not name, so it raises UnknownError for it).
    refused = aiokafka_produce(cluster.bootstrap, topic, mixed_keys())
    assert all(isinstance(exc, aiokafka.errors.KafkaError) for exc in refused.values())
    assert len(refused) == 22
    assert end_offset(cluster, topic) == 0
    keyed = [(b"key-%d" % i, now_ms()) for i in range(3)]
    assert kafka_python_produce(cluster.bootstrap, topic, keyed) == {0: None, 1: None, 2: None}
    assert aiokafka_produce(cluster.bootstrap, topic, keyed) == {0: None, 1: None, 2: None}
    assert end_offset(cluster, topic) == 6


# -- timestamps ----------------------------------------------------------------------------

FUTURE = {2, 5, 6}


def future_stamps() -> list[tuple[bytes | None, int]]:
    stamp = now_ms()
    return [(b"k", stamp + (HOUR if i in FUTURE else 0)) for i in range(8)]


def test_timestamps_beyond_after_max_ms_are_refused_with_their_indexes(cluster: Cluster) -> None:
    topic = "rv-timestamps"
    cluster.create_topic(topic, configs={"message.timestamp.after.max.ms": "60000"})
    # On the wire: INVALID_TIMESTAMP, and the index of each record at fault.
    records = [Record(None, ts, key, b"v") for key, ts in future_stamps()]
    answer = cluster.request(ApiKey.PRODUCE, produce_body(topic, encode_batch(records)),
                             version=9, port=cluster.port_of(cluster.leader_of(topic)))
    entry = answer["responses"][0]["partition_responses"][0]
    assert entry["error_code"] == ErrorCode.INVALID_TIMESTAMP
    assert [e["batch_index"] for e in entry["record_errors"]] == sorted(FUTURE)
    assert all("message.timestamp.after.max.ms" in e["batch_index_error_message"]
               for e in entry["record_errors"])
    assert entry["error_message"]
    # librdkafka fails the records named in record_errors as invalid and the rest as their
    # batch-mates; kafka-python likewise; aiokafka fails all with INVALID_TIMESTAMP.
    confluent = confluent_produce(cluster.bootstrap, topic, future_stamps())
    assert {i for i, err in confluent.items()
            if err.code() == confluent_kafka.KafkaError.INVALID_RECORD} == FUTURE
    assert all(confluent[i].code() == confluent_kafka.KafkaError._INVALID_DIFFERENT_RECORD
               for i in range(8) if i not in FUTURE)
    python = kafka_python_produce(cluster.bootstrap, topic, future_stamps())
    assert {i for i, exc in python.items()
            if isinstance(exc, kafka.errors.InvalidRecordError)} == FUTURE
    assert all(isinstance(exc, aiokafka.errors.InvalidTimestampError)
               for exc in aiokafka_produce(cluster.bootstrap, topic, future_stamps()).values())
    assert end_offset(cluster, topic) == 0


# -- compression.type ----------------------------------------------------------------------

RECORDS = 3_000


def expected(i: int) -> tuple[bytes, bytes, list[tuple[str, bytes]]]:
    return (b"key-%d" % i, b"value-%d-" % i * (1 + i % 5), [("i", b"%d" % i)])


def dumped_codecs(cluster: Cluster, node_id: int, topic: str) -> list[str]:
    """The compresscodec of every batch `raftka dump-log` lists in the node's replica."""
    directory = cluster.data_dir(node_id) / f"{topic}-0"
    files = ",".join(str(p) for p in sorted(directory.glob("*.log")))
    done = subprocess.run([RAFTKA, "dump-log", "--files", files], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [line.split("compresscodec: ")[1].split()[0]
            for line in done.stdout.splitlines() if "compresscodec: " in line]


def test_zstd_topic_stores_lz4_batches_as_zstd_for_every_client(cluster: Cluster) -> None:
    topic = "rv-zstd"
    cluster.create_topic(topic, replication_factor=3, configs={"compression.type": "zstd",
                                                               "compression.zstd.level": "5"})
    producer = confluent_kafka.Producer({
        "bootstrap.servers": cluster.bootstrap, "compression.type": "lz4", "linger.ms": 20,
        "acks": "all", "enable.idempotence": True, "broker.address.family": "v4"})
    stamps: list[int] = []
    failures: list[Any] = []
    for i in range(RECORDS):
        key, value, headers = expected(i)
        stamps.append(now_ms() - i)  # timestamps out of order within batches, kept as sent
        producer.produce(topic, value, key, partition=0, headers=headers, timestamp=stamps[-1],
                         on_delivery=lambda err, msg: failures.append(err) if err else None)
    assert producer.flush(30) == 0 and not failures
    # acks=all: every replica has every batch, each stored in zstd.
    for node in cluster.info.brokers:
        codecs = dumped_codecs(cluster, node.node_id, topic)
        assert codecs and set(codecs) == {"zstd"}, (node.node_id, codecs)
    want = [(i, *expected(i), stamps[i]) for i in range(RECORDS)]
    assert consume_confluent(cluster.bootstrap, topic) == want
    assert consume_kafka_python(cluster.bootstrap, topic) == want
    assert consume_aiokafka(cluster.bootstrap, topic) == want


Row = tuple[int, bytes, bytes, list[tuple[str, bytes]], int]


def consume_confluent(bootstrap: str, topic: str) -> list[Row]:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "rv",
                                         "enable.auto.commit": False,
                                         "broker.address.family": "v4"})
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])

    def poll() -> list[Row]:
        messages = consumer.consume(1000, timeout=0.5)
        assert all(m.error() is None for m in messages), [m.error() for m in messages]
        return [(m.offset(), m.key(), m.value(), m.headers() or [], m.timestamp()[1])
                for m in messages]

    try:
        return collect(poll)
    finally:
        consumer.close()


def consume_kafka_python(bootstrap: str, topic: str) -> list[Row]:
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    partition = kafka.TopicPartition(topic, 0)
    consumer.assign([partition])
    consumer.seek(partition, 0)
    try:
        return collect(lambda: [python_row(m) for batch in consumer.poll(timeout_ms=500).values()
                                for m in batch])
    finally:
        consumer.close()


def consume_aiokafka(bootstrap: str, topic: str) -> list[Row]:
    async def run() -> list[Row]:
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                             enable_auto_commit=False)
        await consumer.start()
        rows: list[Row] = []
        try:
            partition = aiokafka.TopicPartition(topic, 0)
            consumer.assign([partition])
            consumer.seek(partition, 0)
            deadline = time.monotonic() + 30
            while len(rows) < RECORDS and time.monotonic() < deadline:
                polled = await consumer.getmany(timeout_ms=500)
                rows.extend(python_row(m) for batch in polled.values() for m in batch)
        finally:
            await consumer.stop()
        return rows

    return asyncio.run(run())


def python_row(message: Any) -> Row:
    """A kafka-python or aiokafka ConsumerRecord as a row (they share the attribute names)."""
    return (message.offset, message.key, message.value, list(message.headers), message.timestamp)


def collect(poll: Callable[[], list[Row]]) -> list[Row]:
    """Rows from `poll` until RECORDS of them or 30 s."""
    rows: list[Row] = []
    deadline = time.monotonic() + 30
    while len(rows) < RECORDS and time.monotonic() < deadline:
        rows.extend(poll())
    return rows
