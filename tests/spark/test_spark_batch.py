"""Batch reads and writes through the raftka data source, on a real cluster and a real
local[2] SparkSession."""

from __future__ import annotations

import time
from pathlib import Path
from datetime import timezone
from typing import Any

import confluent_kafka
import pytest
from pyspark.sql import Row, SparkSession
from pyspark.sql.types import StructField, StructType, StringType

from cluster.testing.waiting import wait_for
from clients.spark import RaftkaDataSource
from clients.spark.cluster import ClusterClient
from tests.compat.cluster import Cluster
from tests.spark.helpers import produce, spark_options

pytestmark = pytest.mark.slow


def read(spark: SparkSession, cluster: Cluster, **options: Any) -> list[Row]:
    df = spark.read.format("raftka").options(**spark_options(cluster, **options)).load()
    return sorted(df.collect(), key=lambda r: (r.topic, r.partition, r.offset))


def as_dicts(rows: list[Row]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        d = row.asDict(recursive=True)
        d["timestamp_ms"] = int(d.pop("timestamp").replace(tzinfo=timezone.utc).timestamp() * 1000)
        if "headers" in d:
            d["headers"] = [(h["key"], h["value"]) for h in d["headers"]]
        out.append(d)
    return out


def expected_rows(topic: str, delivered: list[dict[str, Any]], headers: bool) -> list[dict]:
    out = []
    for r in delivered:
        row = {"key": r.get("key"), "value": r.get("value"), "topic": topic,
               "partition": r["partition"], "offset": r["offset"],
               "timestamp_ms": r["timestamp_ms"], "timestampType": r["timestampType"]}
        if headers:
            row["headers"] = list(r.get("headers") or [])
        out.append(row)
    return out


def records(n: int, base_ts: int) -> list[dict[str, Any]]:
    return [{"value": b"value-%d" % i if i % 17 else None,
             "key": None if i % 4 == 0 else b"key-%d" % i,
             "headers": [("trace", b"t-%d" % i), ("empty", b"")] if i % 3 else None,
             "timestamp": base_ts + i}
            for i in range(n)]


def test_found_without_register_and_registered_explicitly(spark: SparkSession,
                                                          cluster: Cluster) -> None:
    cluster.create_topic("found", partitions=1)
    produce(cluster, "found", [{"value": b"x"}])
    assert len(read(spark, cluster, subscribe="found")) == 1
    spark.dataSource.register(RaftkaDataSource)
    assert len(read(spark, cluster, subscribe="found")) == 1


def test_every_column_equals_what_confluent_kafka_produced(spark: SparkSession,
                                                           cluster: Cluster) -> None:
    expected: list[dict[str, Any]] = []
    topics = []
    for compression in ("none", "gzip", "lz4"):
        topic = f"columns-{compression}"
        topics.append(topic)
        cluster.create_topic(topic, partitions=2)
        # Recent timestamps: records far in the past would be due for retention at once.
        delivered = produce(cluster, topic, records(200, int(time.time() * 1000) - 60_000),
                            **{"compression.type": compression})
        expected += expected_rows(topic, delivered, headers=True)
    expected.sort(key=lambda r: (r["topic"], r["partition"], r["offset"]))
    rows = as_dicts(read(spark, cluster, subscribe=",".join(topics), includeHeaders="true"))
    assert rows == expected
    assert all(r["timestampType"] == 0 for r in rows)
    assert any(r["key"] is None for r in rows) and any(r["value"] is None for r in rows)
    no_headers = as_dicts(read(spark, cluster, subscribe=",".join(topics)))
    assert no_headers == [{k: v for k, v in r.items() if k != "headers"} for r in expected]


def test_log_append_time_topic(spark: SparkSession, cluster: Cluster) -> None:
    cluster.create_topic("appendtime", partitions=2,
                         configs={"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    delivered = produce(cluster, "appendtime", records(50, 1_000))
    rows = as_dicts(read(spark, cluster, subscribe="appendtime", includeHeaders="true"))
    assert rows == expected_rows("appendtime", delivered, headers=True)
    assert all(r["timestampType"] == 1 and r["timestamp_ms"] >= before - 1000 for r in rows)


def test_assign_offsets_and_splitting(spark: SparkSession, cluster: Cluster) -> None:
    cluster.create_topic("ranges", partitions=2)
    produce(cluster, "ranges", [{"value": b"%d" % i, "partition": i % 2} for i in range(100)])
    rows = read(spark, cluster, assign='{"ranges":[1]}',
                startingOffsets='{"ranges":{"1":10}}', endingOffsets='{"ranges":{"1":20}}')
    assert [(r.partition, r.offset) for r in rows] == [(1, o) for o in range(10, 20)]
    options = spark_options(cluster, subscribe="ranges", maxRecordsPerPartition="10")
    df = spark.read.format("raftka").options(**options).load()
    assert df.rdd.getNumPartitions() == 10 and df.count() == 100
    options = spark_options(cluster, subscribe="ranges", minPartitions="7")
    df = spark.read.format("raftka").options(**options).load()
    assert df.rdd.getNumPartitions() >= 7 and df.count() == 100


def test_offsets_by_timestamp(spark: SparkSession, cluster: Cluster) -> None:
    cluster.create_topic("bytime", partitions=2)
    base = int(time.time() * 1000) - 60_000
    produce(cluster, "bytime", [{"value": b"%d" % i, "partition": i % 2, "timestamp": base + i}
                                for i in range(40)])
    rows = read(spark, cluster, subscribe="bytime", startingTimestamp=str(base + 10),
                endingTimestamp=str(base + 30))
    assert sorted(int(r.value) for r in rows) == list(range(10, 30))
    rows = read(spark, cluster, subscribe="bytime",
                startingOffsetsByTimestamp=f'{{"bytime":{{"0":{base + 20},"1":{base}}}}}',
                endingOffsetsByTimestamp=f'{{"bytime":{{"0":{base + 30},"1":{base + 5}}}}}')
    assert sorted(int(r.value) for r in rows) == [1, 3, 20, 22, 24, 26, 28]
    with pytest.raises(Exception, match="startingTimestamp.*no record"):
        read(spark, cluster, subscribe="bytime", startingTimestamp=str(base + 10_000))
    rows = read(spark, cluster, subscribe="bytime", startingTimestamp=str(base + 10_000),
                startingOffsetsByTimestampStrategy="latest")
    assert rows == []


def wait_for_log_start(cluster: Cluster, topic: str, partition: int, above: int) -> int:
    client = ClusterClient({"bootstrap.servers": cluster.bootstrap})
    try:
        return wait_for(lambda: max(client.earliest([(topic, partition)])[(topic, partition)]
                                    - above, 0),
                        f"retention to delete the start of {topic}-{partition}", 30) + above
    finally:
        client.close()


def test_fail_on_data_loss(spark: SparkSession, cluster: Cluster) -> None:
    cluster.create_topic("lossy", partitions=1, configs={
        "segment.bytes": "4096", "retention.ms": "300"})
    produce(cluster, "lossy", [{"value": b"x" * 200} for _ in range(60)],
            **{"linger.ms": 0, "batch.num.messages": 1})
    log_start = wait_for_log_start(cluster, "lossy", 0, 0)
    with pytest.raises(Exception, match=r"lossy-0: offsets 0 to \d+ can no longer be read"):
        read(spark, cluster, subscribe="lossy", startingOffsets='{"lossy":{"0":0}}')
    rows = read(spark, cluster, subscribe="lossy", startingOffsets='{"lossy":{"0":0}}',
                failOnDataLoss="false")
    assert rows and rows[0].offset >= log_start
    assert [r.offset for r in rows] == list(range(rows[0].offset, 60))


def test_user_schema_and_bad_options_are_refused(spark: SparkSession, cluster: Cluster) -> None:
    reader = spark.read.format("raftka").options(**spark_options(cluster, subscribe="found"))
    with pytest.raises(Exception, match="user-specified schema"):
        reader.schema(StructType([StructField("value", StringType())])).load().collect()
    cases = [
        ({}, "'subscribe', 'subscribePattern' or 'assign'"),
        ({"subscribe": "found", "assign": '{"found":[0]}'}, "only one of the options"),
        ({"subscribe": "found", "startingOffsets": "latest"}, "'startingOffsets' cannot be latest"),
        ({"subscribe": "found", "kafka.auto.offset.reset": "earliest"},
         "'kafka.auto.offset.reset' is not supported"),
        ({"subscribe": "found", "maxOffsetsPerTrigger": "5"},
         "'maxOffsetsPerTrigger' is not valid in batch"),
    ]
    for options, message in cases:
        with pytest.raises(Exception, match=message):
            spark.read.format("raftka").options(**spark_options(cluster, **options)).load() \
                .collect()
    with pytest.raises(Exception, match="'endingOffsets' is not valid in streaming"):
        spark.readStream.format("raftka").options(**spark_options(
            cluster, subscribe="found", endingOffsets="latest")).load() \
            .writeStream.format("memory").queryName("bad").start().awaitTermination(30)


def test_sink_writes_keys_headers_and_partitions(spark: SparkSession, cluster: Cluster) -> None:
    cluster.create_topic("sink-a", partitions=3)
    cluster.create_topic("sink-b", partitions=1)
    df = spark.createDataFrame(
        [("k%d" % i, b"v%d" % i, "sink-a", i % 3, [("h", b"%d" % i)]) for i in range(30)],
        "key string, value binary, topic string, partition int, "
        "headers array<struct<key:string,value:binary>>")
    df.write.format("raftka").options(**spark_options(cluster)).mode("append").save()
    rows = read(spark, cluster, subscribe="sink-a", includeHeaders="true")
    got = {(r.key, r.value, r.partition, tuple((h.key, h.value) for h in r.headers)) for r in rows}
    assert got == {(b"k%d" % i, b"v%d" % i, i % 3, (("h", b"%d" % i),)) for i in range(30)}
    # The topic option wins over the column.
    df.select("value", "topic").write.format("raftka") \
        .options(**spark_options(cluster, topic="sink-b")).mode("append").save()
    assert len(read(spark, cluster, subscribe="sink-b")) == 30


def test_sink_refusals_and_delivery_failures(spark: SparkSession, cluster: Cluster,
                                            tmp_path: Path) -> None:
    df = spark.createDataFrame([("a",)], "value string")
    with pytest.raises(Exception, match="cannot overwrite"):
        df.write.format("raftka").options(**spark_options(cluster, topic="x")) \
            .mode("overwrite").save()
    with pytest.raises(Exception, match="'exactlyOnceWriteId' needs exactlyOnce=true"):
        df.write.format("raftka").options(**spark_options(
            cluster, topic="x", exactlyOnceWriteId="w")).mode("append").save()
    with pytest.raises(Exception, match="'exactlyOnceWriteId' is for batch writes"):
        spark.readStream.format("rate").load().selectExpr("CAST(value AS STRING) AS value") \
            .writeStream.format("raftka").options(**spark_options(
                cluster, topic="x", exactlyOnce="true", exactlyOnceWriteId="w")) \
            .option("checkpointLocation", str(tmp_path / "checkpoint")) \
            .start().awaitTermination(60)
    with pytest.raises(Exception, match="option 'topic' or a 'topic' column"):
        df.write.format("raftka").options(**spark_options(cluster)).mode("append").save()
    cluster.create_topic("one-partition", partitions=1)
    bad = spark.createDataFrame([("a", 5)], "value string, partition int")
    with pytest.raises(Exception, match="delivery to Kafka failed"):
        bad.write.format("raftka").options(**spark_options(
            cluster, topic="one-partition", **{"kafka.delivery.timeout.ms": "3000",
                                               "kafka.request.timeout.ms": "1000",
                                               "kafka.max.block.ms": "2000"})) \
            .mode("append").save()


def test_confluent_kafka_reads_what_the_sink_wrote(spark: SparkSession, cluster: Cluster) -> None:
    cluster.create_topic("sink-c", partitions=2)
    spark.createDataFrame([(b"key-%d" % i, "v%d" % i) for i in range(20)], "key binary, value string") \
        .write.format("raftka").options(**spark_options(cluster, topic="sink-c")) \
        .mode("append").save()
    consumer = confluent_kafka.Consumer({"bootstrap.servers": cluster.bootstrap,
                                         "group.id": "sink-c-check", "auto.offset.reset": "earliest",
                                         "broker.address.family": "v4"})
    consumer.subscribe(["sink-c"])
    seen: dict[bytes, bytes] = {}
    deadline = time.monotonic() + 30
    while len(seen) < 20 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            seen[msg.key()] = msg.value()
    consumer.close()
    assert seen == {b"key-%d" % i: b"v%d" % i for i in range(20)}
