"""``RaftkaDataSource``: the PySpark data source named ``raftka``."""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from clients.spark.options import SparkOptionError, parse_source_options
from clients.spark.reader import RaftkaBatchReader
from clients.spark.schema import source_schema
from clients.spark.security import connection_security
from clients.spark.stream_reader import RaftkaStreamReader
from clients.spark.sink import RaftkaStreamWriter, RaftkaWriter
from clients.spark.sink_options import SinkOptions, parse_sink_options
from clients.spark.writer import sink_columns


class RaftkaDataSource(DataSource):
    """Kafka topics as DataFrames, with the schema and options of Spark's Kafka source.

    ``spark.read``/``readStream.format("raftka")`` read; ``write``/``writeStream`` write.
    """

    @classmethod
    def name(cls) -> str:
        return "raftka"

    def _include_headers(self) -> bool:
        value = str(self.options.get("includeHeaders", "false")).strip().lower()
        return value == "true"

    def schema(self) -> StructType:
        return source_schema(self._include_headers())

    def _check_schema(self, schema: StructType) -> None:
        if schema != self.schema():
            raise SparkOptionError("the raftka source has a fixed schema (that of Spark's "
                                   "Kafka source); a user-specified schema is not supported")

    def reader(self, schema: StructType) -> DataSourceReader:
        self._check_schema(schema)
        return RaftkaBatchReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        self._check_schema(schema)
        return RaftkaStreamReader(parse_source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        options = self._sink_options(overwrite)
        return RaftkaWriter(options, sink_columns(schema, options.topic))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        options = self._sink_options(overwrite)
        return RaftkaStreamWriter(options, sink_columns(schema, options.topic))

    def _sink_options(self, overwrite: bool) -> SinkOptions:
        if overwrite:
            raise SparkOptionError("the raftka sink cannot overwrite: Kafka topics are "
                                   "append-only (use mode 'append')")
        options = parse_sink_options(self.options)
        # The TLS files are read here, on the driver, so a bad one fails the write before
        # any task starts (the tasks' producers read them again).
        connection_security(options.kafka)
        return options
