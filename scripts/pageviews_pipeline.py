"""A Structured Streaming pipeline on Raftka: page views per page per minute.

  1. produce synthetic page-view events (key: the user, value: JSON, record timestamp: the
     event time) to a topic;
  2. a streaming query reads them with the ``raftka`` source, counts views per page per
     one-minute event-time window (with a watermark) and writes the counts to a second topic
     with the ``raftka`` sink;
  3. a batch query reads the counts back and prints the final table.

    python scripts/pageviews_pipeline.py --bootstrap-servers HOST:PORT [--events N]
        [--master local[2]] [--work-dir DIR]

Needs Java 17 or newer (Spark's own requirement) and ``pip install raftka``.
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQueryListener

from clients.cli.main import OneLineParser, positive_int
from clients.clock import wall_clock_ms
from clients.producer import BlockingProducer

EVENTS_TOPIC = "page-views"
COUNTS_TOPIC = "page-views-per-minute"
PAGES = ["/", "/pricing", "/docs", "/blog", "/signup"]


def produce_events(bootstrap: str, count: int) -> None:
    """``count`` page views over the last five minutes of event time, in time order (a
    view more than the watermark's minute late would be dropped)."""
    now_ms = wall_clock_ms()
    rng = random.Random(42)
    with BlockingProducer({"bootstrap.servers": bootstrap, "acks": "all"}) as producer:
        for i in range(count):
            user = f"user-{rng.randrange(100)}"
            event_ms = now_ms - 5 * 60_000 + i * 5 * 60_000 // count
            event = {"user": user, "page": rng.choice(PAGES)}
            producer.send(EVENTS_TOPIC, json.dumps(event).encode(), key=user.encode(),
                          timestamp=event_ms)
        # One more view two minutes on: it moves the watermark past every minute above,
        # so each is final and written; its own minute stays open.
        producer.send(EVENTS_TOPIC, json.dumps({"user": "user-0", "page": "/"}).encode(),
                      key=b"user-0", timestamp=now_ms + 2 * 60_000)
        producer.flush()
    print(f"   produced {count} page views to {EVENTS_TOPIC}", flush=True)


class PrintProgress(StreamingQueryListener):
    """Prints each micro-batch as it completes."""

    def onQueryStarted(self, event) -> None:  # type: ignore[no-untyped-def]
        print(f"   query {event.name} started", flush=True)

    def onQueryProgress(self, event) -> None:  # type: ignore[no-untyped-def]
        p = event.progress
        print(f"   batch {p.batchId}: {p.numInputRows} events in, "
              f"{p.processedRowsPerSecond:,.0f} events/s, watermark {p.eventTime.get('watermark', '-')}",
              flush=True)

    def onQueryIdle(self, event) -> None:  # type: ignore[no-untyped-def]
        pass

    def onQueryTerminated(self, event) -> None:  # type: ignore[no-untyped-def]
        print("   query finished" + (f" with {event.exception}" if event.exception else ""),
              flush=True)


def count_views(spark: SparkSession, bootstrap: str, checkpoint: str, per_trigger: int) -> None:
    """The streaming query: events in, per-page per-minute counts out. Append mode: a
    minute's count is written once, when the watermark (newest event time seen minus one
    minute) has passed the end of that minute."""
    events = (spark.readStream.format("raftka")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", EVENTS_TOPIC)
              .option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", per_trigger)
              .load())
    schema = "user string, page string"
    counts = (events
              .select(F.from_json(F.col("value").cast("string"), schema).alias("event"),
                      F.col("timestamp"))
              .withWatermark("timestamp", "1 minute")
              .groupBy(F.window("timestamp", "1 minute"), F.col("event.page").alias("page"))
              .count())
    out = counts.select(
        F.col("page").alias("key"),
        F.to_json(F.struct(F.col("window.start").alias("minute"), "page",
                           F.col("count").alias("views"))).alias("value"))
    query = (out.writeStream.format("raftka").queryName("page-views-per-minute")
             .option("kafka.bootstrap.servers", bootstrap)
             .option("topic", COUNTS_TOPIC)
             .option("checkpointLocation", checkpoint)
             .outputMode("append")
             .trigger(availableNow=True)
             .start())
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(f"the streaming query failed: {query.exception()}")


def read_back(spark: SparkSession, bootstrap: str) -> list:
    """The batch query: every page's count per minute."""
    schema = "minute timestamp, page string, views long"
    rows = (spark.read.format("raftka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", COUNTS_TOPIC)
            .load()
            .select(F.from_json(F.col("value").cast("string"), schema).alias("c"))
            .select("c.*")
            .orderBy("minute", "page"))
    rows.show(100, truncate=False)
    return rows.collect()


def main() -> int:
    parser = OneLineParser(prog="scripts/pageviews_pipeline.py",
                           description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--events", type=positive_int, default=20_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--work-dir", default=None, help="checkpoint location's parent")
    args = parser.parse_args()
    # Spark runs its Python workers with PYSPARK_PYTHON; use this interpreter's packages.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work_dir = args.work_dir or tempfile.mkdtemp(prefix="pageviews-")

    print("== producing page views", flush=True)
    produce_events(args.bootstrap_servers, args.events)

    spark = (SparkSession.builder.master(args.master).appName("raftka-pageviews")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4")
             .config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        spark.streams.addListener(PrintProgress())
        print("== streaming: views per page per minute -> " + COUNTS_TOPIC, flush=True)
        count_views(spark, args.bootstrap_servers, os.path.join(work_dir, "checkpoint"),
                    max(args.events // 4, 1))
        print("== batch read of " + COUNTS_TOPIC, flush=True)
        rows = read_back(spark, args.bootstrap_servers)
    finally:
        spark.stop()
    total = sum(r.views for r in rows)
    print(f"   {len(rows)} page-minutes, {total} views in all", flush=True)
    if total != args.events:
        print(f"pipeline: expected {args.events} views, counted {total}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
