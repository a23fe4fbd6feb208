"""The baseline of `scripts/bench-spark`: a minimal Python data source
(`confluent_baseline`) that reads a topic the obvious way, with a confluent-kafka Consumer per
partition yielding one tuple per record. Spark's Python workers import this module to run
its reader, so it does nothing on import."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Iterator

import confluent_kafka
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from clients.spark.schema import source_schema


class BaselinePartition(InputPartition):
    def __init__(self, partition: int, start: int, end: int) -> None:
        super().__init__(None)
        self.partition, self.start, self.end = partition, start, end


class BaselineReader(DataSourceReader):
    """The obvious way: a confluent-kafka Consumer per partition, one tuple per record.
    Options: `bootstrap`, `topic` and `partitions` (how many the topic has)."""

    def __init__(self, options: dict[str, str]) -> None:
        self.servers, self.topic = options["bootstrap"], options["topic"]
        self.partition_count = int(options["partitions"])

    def partitions(self) -> list[InputPartition]:
        consumer = confluent_kafka.Consumer({"bootstrap.servers": self.servers,
                                             "group.id": "baseline"})
        parts: list[InputPartition] = []
        for p in range(self.partition_count):
            low, high = consumer.get_watermark_offsets(
                confluent_kafka.TopicPartition(self.topic, p), timeout=30)
            parts.append(BaselinePartition(p, low, high))
        consumer.close()
        return parts

    def read(self, partition: BaselinePartition  # type: ignore[override]
             ) -> Iterator[tuple[Any, ...]]:
        consumer = confluent_kafka.Consumer({"bootstrap.servers": self.servers,
                                             "group.id": "baseline",
                                             "enable.auto.commit": False})
        consumer.assign([confluent_kafka.TopicPartition(self.topic, partition.partition,
                                                        partition.start)])
        position = partition.start
        while position < partition.end:
            for msg in consumer.consume(10_000, timeout=1.0):
                if msg.error() is not None or msg.offset() >= partition.end:
                    continue
                ts_type, ts = msg.timestamp()
                yield (msg.key(), msg.value(), msg.topic(), msg.partition(), msg.offset(),
                       datetime.fromtimestamp(ts / 1000, tz=timezone.utc), ts_type - 1)
                position = msg.offset() + 1
        consumer.close()


class BaselineSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "confluent_baseline"

    def schema(self) -> StructType:
        return source_schema(False)

    def reader(self, schema: StructType) -> BaselineReader:
        return BaselineReader(dict(self.options))
