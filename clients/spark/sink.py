"""The sink's Spark writers, batch and streaming: at least once by default, exactly once
with ``exactlyOnce=true``."""

from __future__ import annotations

import uuid
from typing import Any, Iterator

from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage

from clients.spark.exactly_once import write_transactionally
from clients.spark.options import SparkOptionError
from clients.spark.sink_options import SinkOptions
from clients.spark.writer import RowsWritten, SinkColumns, write_rows

# Local properties Spark's micro-batch execution gives every task of a streaming query.
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"


class RaftkaWriter(DataSourceWriter):
    """Batch writes (``df.write.format("raftka")``). Records are visible once each task has
    flushed (or committed its transaction), so commit and abort have nothing left to do.

    With exactlyOnce=true the write's id is ``exactlyOnceWriteId`` when given (stable: a
    re-run of the same write skips the partitions already committed), else a fresh id for
    this write, made on the driver, which every attempt of its tasks shares."""

    def __init__(self, options: SinkOptions, columns: SinkColumns) -> None:
        self.options = options
        self.columns = columns
        self.write_id = options.write_id or f"write-{uuid.uuid4()}"

    def write(self, iterator: Iterator[Any]) -> RowsWritten:
        if self.options.exactly_once:
            return write_transactionally(self.options, self.columns, iterator,
                                         self.write_id, 0)
        return write_rows(self.options, self.columns, iterator)


class RaftkaStreamWriter(DataSourceStreamWriter):
    """Streaming writes (``writeStream.format("raftka")``): at least once per micro-batch,
    or exactly once keyed by the query's id (kept in its checkpoint) and batch id."""

    def __init__(self, options: SinkOptions, columns: SinkColumns) -> None:
        if options.write_id is not None:
            raise SparkOptionError("option 'exactlyOnceWriteId' is for batch writes: a "
                                   "streaming query's writes are keyed by its query id")
        self.options = options
        self.columns = columns

    def write(self, iterator: Iterator[Any]) -> RowsWritten:
        if not self.options.exactly_once:
            return write_rows(self.options, self.columns, iterator)
        context = TaskContext.get()
        query_id = context.getLocalProperty(QUERY_ID_PROPERTY) if context else None
        batch_id = context.getLocalProperty(BATCH_ID_PROPERTY) if context else None
        if query_id is None or batch_id is None:
            raise RuntimeError("exactlyOnce=true: the task does not know its streaming "
                               "query id and batch id (only micro-batch queries are "
                               "supported)")
        return write_transactionally(self.options, self.columns, iterator, query_id,
                                     int(batch_id))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass
