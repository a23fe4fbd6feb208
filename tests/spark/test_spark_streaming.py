"""Structured Streaming through the raftka source, on a real cluster and a local[2] session."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from cluster.testing.waiting import wait_for
from clients.admin import BlockingAdmin
from tests.compat.cluster import Cluster
from tests.spark.helpers import produce, spark_options

pytestmark = pytest.mark.slow

RAFTKA = Path(sys.executable).with_name("raftka")


def stream(spark: SparkSession, cluster: Cluster, **options: Any):  # type: ignore[no-untyped-def]
    return spark.readStream.format("raftka").options(
        **spark_options(cluster, startingOffsets="earliest", **options)).load()


def run_available_now(spark: SparkSession, cluster: Cluster, out: Path, checkpoint: Path,
                      **options: Any) -> StreamingQuery:
    query = (stream(spark, cluster, **options)
             .selectExpr("topic", "partition", "offset", "CAST(value AS STRING) AS value")
             .writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(120), "the AvailableNow query did not finish in 120 s"
    assert query.exception() is None, query.exception()
    return query


def positions(spark: SparkSession, out: Path) -> list[tuple[int, int]]:
    return sorted((r.partition, r.offset) for r in spark.read.parquet(str(out)).collect())


def group_lag(cluster: Cluster, group: str) -> dict[tuple[str, int], int]:
    result = subprocess.run([str(RAFTKA), "groups", "--bootstrap-server", cluster.bootstrap,
                             "--describe", "--group", group],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    if not lines:
        return {}
    header = lines[0].split()
    rows = [dict(zip(header, line.split())) for line in lines[1:]]
    return {(r["TOPIC"], int(r["PARTITION"])): int(r["LAG"]) for r in rows}


def test_available_now_then_more_data_then_restart(spark: SparkSession, cluster: Cluster,
                                                   tmp_path: Path) -> None:
    """Every record exactly once across runs of one checkpoint, and the query's group
    shows lag 0 once it has caught up."""
    cluster.create_topic("again", partitions=2)
    produce(cluster, "again", [{"value": b"a%d" % i} for i in range(60)])
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    options = {"subscribe": "again", "kafka.group.id": "spark-again"}
    run_available_now(spark, cluster, out, checkpoint, **options)
    assert len(positions(spark, out)) == 60
    produce(cluster, "again", [{"value": b"b%d" % i} for i in range(40)])
    run_available_now(spark, cluster, out, checkpoint, **options)
    seen = positions(spark, out)
    assert len(seen) == len(set(seen)) == 100
    for partition in (0, 1):
        offsets = [o for p, o in seen if p == partition]
        assert offsets == list(range(len(offsets)))
    assert group_lag(cluster, "spark-again") == {("again", 0): 0, ("again", 1): 0}


def test_max_offsets_per_trigger_bounds_each_batch(spark: SparkSession, cluster: Cluster,
                                                   tmp_path: Path) -> None:
    cluster.create_topic("bounded", partitions=2)
    produce(cluster, "bounded", [{"value": b"%d" % i} for i in range(100)])
    query = run_available_now(spark, cluster, tmp_path / "out", tmp_path / "checkpoint",
                              subscribe="bounded", maxOffsetsPerTrigger="30")
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sum(sizes) == 100 and max(sizes) <= 30 and len(sizes) >= 4, sizes


def test_new_partitions_and_topics_are_picked_up(spark: SparkSession, cluster: Cluster) -> None:
    """A partition added mid-stream is read from its start; subscribePattern picks up a
    topic created mid-stream."""
    cluster.create_topic("grow-a", partitions=1)
    produce(cluster, "grow-a", [{"value": b"first"}])
    query = (stream(spark, cluster, subscribePattern="grow-.*")
             .writeStream.format("memory").queryName("grown")
             .trigger(processingTime="500 milliseconds").start())
    try:
        def rows() -> set[tuple[str, int, int]]:
            return {(r.topic, r.partition, r.offset)
                    for r in spark.sql("SELECT topic, partition, offset FROM grown").collect()}

        wait_for(lambda: ("grow-a", 0, 0) in rows(), "the first record", 60)
        with BlockingAdmin({"bootstrap.servers": cluster.bootstrap}) as admin:
            admin.create_partitions({"grow-a": 2})
        cluster.wait_for_leaders("grow-a", 2)
        produce(cluster, "grow-a", [{"value": b"new-%d" % i, "partition": 1} for i in range(3)])
        cluster.create_topic("grow-b", partitions=1)
        produce(cluster, "grow-b", [{"value": b"b"}])
        wanted = {("grow-a", 0, 0), ("grow-a", 1, 0), ("grow-a", 1, 1), ("grow-a", 1, 2),
                  ("grow-b", 0, 0)}
        wait_for(lambda: wanted <= rows(), "the new partition's and topic's records", 90)
        assert query.exception() is None
    finally:
        query.stop()
