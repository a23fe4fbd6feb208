"""The sink with exactlyOnce=true: transactional task writes, fencing of killed attempts
and the control topic, on a real cluster and a local[2,2] session (each task may fail once
and be retried, as on a cluster)."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

import confluent_kafka
import pytest
from pyspark.sql import DataFrame, SparkSession

from cluster.testing.waiting import wait_for
from clients.admin import BlockingAdmin
from clients.spark.cluster import ClusterClient
from clients.spark.sink_options import DEFAULT_CONTROL_TOPIC
from tests.compat.cluster import Cluster
from tests.spark.conftest import spark_session
from tests.spark.helpers import produce, spark_options

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    with spark_session("local[2,2]") as session:
        yield session  # type: ignore[misc]


def consume_values(cluster: Cluster, topic: str, isolation: str) -> Counter[bytes]:
    """Every value of ``topic`` a confluent-kafka consumer with ``isolation`` sees, read
    from the beginning to the end of each partition."""
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": cluster.bootstrap, "broker.address.family": "v4",
        "group.id": f"check-{uuid.uuid4()}", "enable.auto.commit": False,
        "enable.partition.eof": True, "isolation.level": isolation})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([confluent_kafka.TopicPartition(topic, p,
                                                        confluent_kafka.OFFSET_BEGINNING)
                         for p in partitions])
        seen: Counter[bytes] = Counter()
        at_end: set[int] = set()

        def drained() -> bool:
            msg = consumer.poll(0.5)
            if msg is None:
                return False
            if msg.error() is not None:
                assert msg.error().code() == confluent_kafka.KafkaError._PARTITION_EOF, \
                    msg.error()
                at_end.add(msg.partition())
            else:
                seen[msg.value()] += 1
            return at_end >= set(partitions)

        wait_for(drained, f"the end of every partition of {topic} ({isolation})", 60)
        return seen
    finally:
        consumer.close()


def end_offsets(cluster: Cluster, topic: str, partitions: int) -> dict[tuple[str, int], int]:
    client = ClusterClient({"bootstrap.servers": cluster.bootstrap})
    try:
        return client.latest([(topic, p) for p in range(partitions)])
    finally:
        client.close()


def rows(spark: SparkSession, n: int, prefix: str, tasks: int) -> DataFrame:
    return spark.createDataFrame([(f"k{i}", f"{prefix}-{i}") for i in range(n)],
                                 "key string, value string").repartition(tasks)


def write(df: DataFrame, cluster: Cluster, topic: str, **options: Any) -> None:
    df.write.format("raftka").options(**spark_options(
        cluster, topic=topic, exactlyOnce="true", **options)).mode("append").save()


def expected(prefix: str, n: int) -> Counter[bytes]:
    return Counter(f"{prefix}-{i}".encode() for i in range(n))


def test_batch_write_lands_exactly_once_and_creates_a_compacted_control_topic(
        spark: SparkSession, cluster: Cluster) -> None:
    cluster.create_topic("eos-batch", partitions=3)
    write(rows(spark, 300, "b", 4), cluster, "eos-batch")
    assert consume_values(cluster, "eos-batch", "read_committed") == expected("b", 300)
    with BlockingAdmin({"bootstrap.servers": cluster.bootstrap}) as admin:
        configs = admin.describe_configs(DEFAULT_CONTROL_TOPIC, ["cleanup.policy"])
    assert configs["cleanup.policy"].value == "compact"
    # One commit record per task.
    assert sum(consume_values(cluster, DEFAULT_CONTROL_TOPIC, "read_committed").values()) == 4


def test_task_killed_after_writing_before_commit_leaves_each_row_once(
        spark: SparkSession, cluster: Cluster) -> None:
    """Each task's first attempt dies (its Python worker exits) after every record is
    acknowledged and before the commit; Spark retries it, the retry fences the dead attempt
    and aborts its transaction."""
    cluster.create_topic("eos-killed", partitions=2)
    write(rows(spark, 200, "k", 2), cluster, "eos-killed",
          **{"test.crashBeforeCommitAttempts": "1", "exactlyOnceControlTopic": "eos-commits"})
    assert consume_values(cluster, "eos-killed", "read_committed") == expected("k", 200)
    # The killed attempts had written their rows: read_uncommitted sees them twice.
    assert consume_values(cluster, "eos-killed", "read_uncommitted") == Counter(
        {value: 2 for value in expected("k", 200)})


def test_rerunning_a_batch_write_with_its_write_id_writes_nothing(
        spark: SparkSession, cluster: Cluster) -> None:
    cluster.create_topic("eos-rerun", partitions=2)
    df = rows(spark, 100, "r", 3)
    write(df, cluster, "eos-rerun", exactlyOnceWriteId="nightly-1")
    before = end_offsets(cluster, "eos-rerun", 2)
    write(df, cluster, "eos-rerun", exactlyOnceWriteId="nightly-1")
    assert end_offsets(cluster, "eos-rerun", 2) == before
    assert consume_values(cluster, "eos-rerun", "read_committed") == expected("r", 100)
    write(df, cluster, "eos-rerun", exactlyOnceWriteId="nightly-2")  # another write: lands
    assert consume_values(cluster, "eos-rerun", "read_committed") == Counter(
        {value: 2 for value in expected("r", 100)})


def run_stream(spark: SparkSession, cluster: Cluster, checkpoint: Path, **options: Any
               ) -> list[dict[str, Any]]:
    query = (spark.readStream.format("raftka")
             .options(**spark_options(cluster, subscribe="eos-in", startingOffsets="earliest"))
             .load().select("key", "value")
             .writeStream.format("raftka")
             .options(**spark_options(cluster, topic="eos-out", exactlyOnce="true", **options))
             .option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(180), "the AvailableNow query did not finish in 180 s"
    assert query.exception() is None, query.exception()
    return [p for p in query.recentProgress if p["numInputRows"]]


def test_streaming_exactly_once_with_killed_tasks_and_a_rerun_batch(
        spark: SparkSession, cluster: Cluster, tmp_path: Path) -> None:
    cluster.create_topic("eos-in", partitions=2)
    cluster.create_topic("eos-out", partitions=2)
    produce(cluster, "eos-in", [{"key": b"k%d" % i, "value": b"s-%d" % i} for i in range(100)])
    checkpoint = tmp_path / "checkpoint"
    run_stream(spark, cluster, checkpoint)
    assert consume_values(cluster, "eos-out", "read_committed") == expected("s", 100)

    # The query stops after the sink committed a batch and before Spark's commit log
    # recorded it: on restart Spark runs that batch again (same query id and batch id).
    last_batch = max(int(p.name) for p in (checkpoint / "commits").iterdir()
                     if p.name.isdigit())
    for name in (str(last_batch), f".{last_batch}.crc"):
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    before = end_offsets(cluster, "eos-out", 2)
    rerun = run_stream(spark, cluster, checkpoint)
    assert [p["batchId"] for p in rerun] == [last_batch]
    assert end_offsets(cluster, "eos-out", 2) == before  # nothing written, nothing committed
    assert consume_values(cluster, "eos-out", "read_committed") == expected("s", 100)

    # A new batch whose tasks are each killed once between their last send and the commit.
    produce(cluster, "eos-in", [{"key": b"k%d" % i, "value": b"s-%d" % i}
                                for i in range(100, 160)])
    run_stream(spark, cluster, checkpoint, **{"test.crashBeforeCommitAttempts": "1"})
    assert consume_values(cluster, "eos-out", "read_committed") == expected("s", 160)
    uncommitted = consume_values(cluster, "eos-out", "read_uncommitted")
    assert all(uncommitted[b"s-%d" % i] == 2 for i in range(100, 160)), uncommitted
