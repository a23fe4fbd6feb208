"""The sink: DataFrame rows to Kafka records with Raftka's producer, batch and streaming.

Columns as Spark's Kafka sink: ``value`` (required), ``key``, ``topic`` (the ``topic``
option wins), ``partition``, ``headers``; other columns are ignored. Each task flushes its
idempotent producer before it reports success, and any failed delivery fails the task, so
every row is written at least once (a retried task may write some rows twice). With
``exactlyOnce=true`` each task writes in a transaction instead (``exactly_once``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from pyspark.sql.datasource import WriterCommitMessage
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    StringType,
    StructType,
)

from clients.producer import BlockingProducer
from clients.producer.future import DeliveryFuture
from clients.protocol import KafkaError
from clients.spark.options import SparkOptionError
from clients.spark.sink_options import SinkOptions

# Producer defaults for the sink: every record acknowledged by the whole ISR, and (as in
# Kafka's producer, whose default it is with acks=all) idempotent, so a producer retry
# never duplicates or reorders a record.
PRODUCER_DEFAULTS = {"acks": "all", "linger.ms": "5"}
_TEXT_OR_BYTES = (BinaryType, StringType)


@dataclass(frozen=True)
class SinkColumns:
    """Where each known column sits in the input rows (None when absent)."""

    value: int
    key: int | None
    topic: int | None
    partition: int | None
    headers: int | None


def _check_type(name: str, actual: DataType, allowed: tuple[type, ...], wanted: str) -> None:
    if not isinstance(actual, allowed):
        raise SparkOptionError(f"the sink's '{name}' column must be {wanted}, got "
                               f"{actual.simpleString()}")


def sink_columns(schema: StructType, topic_option: str | None) -> SinkColumns:
    """Check the input schema as Spark's Kafka sink does; errors name the column."""
    index = {f.name: i for i, f in enumerate(schema.fields)}
    types = {f.name: f.dataType for f in schema.fields}
    if "value" not in index:
        raise SparkOptionError("the sink needs a 'value' column (binary or string)")
    _check_type("value", types["value"], _TEXT_OR_BYTES, "binary or string")
    if "key" in index:
        _check_type("key", types["key"], _TEXT_OR_BYTES, "binary or string")
    if "topic" in index:
        _check_type("topic", types["topic"], (StringType,), "string")
    elif topic_option is None:
        raise SparkOptionError("the sink needs the option 'topic' or a 'topic' column")
    if "partition" in index:
        _check_type("partition", types["partition"], (IntegerType,), "int")
    if "headers" in index:
        headers = types["headers"]
        element = headers.elementType if isinstance(headers, ArrayType) else None
        if not (isinstance(element, StructType)
                and [f.name for f in element.fields] == ["key", "value"]
                and isinstance(element.fields[0].dataType, StringType)
                and isinstance(element.fields[1].dataType, BinaryType)):
            raise SparkOptionError("the sink's 'headers' column must be "
                                   "array<struct<key:string,value:binary>>, got "
                                   f"{headers.simpleString()}")
    return SinkColumns(index["value"], index.get("key"), index.get("topic"),
                       index.get("partition"), index.get("headers"))


def _as_bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


class DeliveryFailed(RuntimeError):
    """A record could not be delivered; the task fails so Spark retries it."""


@dataclass(frozen=True)
class RowsWritten(WriterCommitMessage):
    """A task's report: how many records it delivered (``skipped``: none, because an
    earlier attempt had committed the same batch)."""

    records: int
    skipped: bool = False


def producer_settings(options: SinkOptions) -> dict[str, str]:
    """The producer configuration of the sink's tasks."""
    return {**PRODUCER_DEFAULTS, **options.kafka}


def write_rows(options: SinkOptions, columns: SinkColumns, rows: Iterator[Any]) -> RowsWritten:
    """Send every row and wait for all acknowledgements; raise on the first failure."""
    producer = BlockingProducer(producer_settings(options))
    try:
        count = send_rows(producer, options, columns, rows)
    finally:
        producer.close()
    return RowsWritten(count)


def send_rows(producer: BlockingProducer, options: SinkOptions, columns: SinkColumns,
              rows: Iterator[Any]) -> int:
    """Send every row and flush; DeliveryFailed on the first failure. Returns the count."""
    failures: list[BaseException] = []

    def settled(future: DeliveryFuture) -> None:
        error = future.exception()
        if error is not None and not failures:
            failures.append(error)

    count = 0
    for row in rows:
        topic = options.topic or (row[columns.topic] if columns.topic is not None else None)
        if not topic:
            raise DeliveryFailed("a row has a null topic and the option 'topic' is not set")
        headers = None
        if columns.headers is not None and row[columns.headers]:
            headers = [(h[0], _as_bytes(h[1])) for h in row[columns.headers]]
        try:
            future = producer.send(
                topic, _as_bytes(row[columns.value]),
                key=_as_bytes(row[columns.key]) if columns.key is not None else None,
                headers=headers,
                partition=row[columns.partition] if columns.partition is not None else None)
        except KafkaError as exc:
            raise DeliveryFailed(f"delivery to Kafka failed: {exc}") from exc
        future.add_callback(settled)
        count += 1
        if failures:
            break
    producer.flush()
    if failures:
        raise DeliveryFailed(f"delivery to Kafka failed: {failures[0]}") from failures[0]
    return count
