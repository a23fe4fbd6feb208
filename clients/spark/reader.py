"""The batch reader: plans offset ranges on the driver, reads them on the executors."""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from clients.spark.cluster import ClusterClient
from clients.spark.fetch_task import read_task
from clients.spark.options import SourceOptions, SparkOptionError
from clients.spark.planning import KafkaInputPartition, offset_ranges, resolve, tasks


def open_client(options: SourceOptions) -> ClusterClient:
    return ClusterClient(options.kafka, options.read_committed, options.fetch_offset_retries,
                         options.fetch_offset_retry_interval_ms)


def check_assigned(options: SourceOptions, found: list[tuple[str, int]]) -> None:
    """``assign`` names partitions that must exist."""
    if options.selection.kind != "assign":
        return
    missing = sorted(set(options.selection.partitions) - set(found))
    if missing:
        topic, partition = missing[0]
        raise SparkOptionError(f"option 'assign': partition {topic}-{partition} does not exist")


def read_partition(partition: InputPartition) -> Iterator[pa.RecordBatch]:
    """An executor's read of one planned task (PySpark sends an empty plan as a None value)."""
    if not isinstance(partition, KafkaInputPartition):
        return iter(())
    return read_task(partition)


class RaftkaBatchReader(DataSourceReader):
    """``spark.read.format("raftka")``: one task per partition range (cut further by
    minPartitions / maxRecordsPerPartition). Pickled to executors: holds options only."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        options = self.options
        client = open_client(options)
        try:
            found = client.partitions(options.selection)
            check_assigned(options, found)
            start = resolve(client, options.starting, found, True, options.by_timestamp_strategy)
            end = resolve(client, options.ending, found, False)
            return list(tasks(client, offset_ranges(start, end, options.fail_on_data_loss),
                              options))
        finally:
            client.close()

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(partition)
