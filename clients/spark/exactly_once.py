"""One task of the exactly-once sink: its rows and its control record in one transaction.

The transactional id is derived from the write's id and the task's Spark partition, so
every attempt of a task (a retry, a speculative copy, the re-run of a micro-batch after a
restart) shares it: ``init_transactions`` fences the older attempts and aborts whatever they
left open. Only then does the task look in the control topic for its batch; if an earlier
attempt committed it, the task writes nothing.
"""

from __future__ import annotations

import os
from typing import Any, Iterator

from pyspark import TaskContext

from clients.producer import BlockingProducer
from clients.spark.sink_options import SinkOptions
from clients.spark.sink_commits import (
    TaskKey,
    commit_record,
    ensure_control_topic,
    last_committed_batch,
)
from clients.spark.writer import RowsWritten, SinkColumns, producer_settings, send_rows

# Exit status of a task attempt crashed on purpose by the test hook.
CRASH_EXIT_STATUS = 70


def write_transactionally(options: SinkOptions, columns: SinkColumns, rows: Iterator[Any],
                          write_id: str, batch_id: int) -> RowsWritten:
    """Write this task's rows of ``batch_id`` exactly once; raise on any failure (the
    transaction is then aborted, or left to the next attempt's fencing)."""
    context = TaskContext.get()
    if context is None:
        raise RuntimeError("the exactly-once sink writes only inside a Spark task")
    key = TaskKey(write_id, context.partitionId())
    ensure_control_topic(options.kafka, options.control_topic)
    producer = BlockingProducer({**producer_settings(options),
                                 "transactional.id": key.transactional_id()})
    try:
        producer.init_transactions()
        control_partition = key.control_partition(
            len(producer.partitions_for(options.control_topic)))
        config = producer.config
        wait_s = (config.transaction_timeout_ms + config.request_timeout_ms) / 1000
        done = last_committed_batch(options.kafka, options.control_topic, control_partition,
                                    key, wait_s)
        if done is not None and done >= batch_id:
            return RowsWritten(0, skipped=True)
        producer.begin_transaction()
        try:
            count = send_rows(producer, options, columns, rows)
            record_key, record_value = commit_record(key, batch_id, count)
            producer.send(options.control_topic, record_value, key=record_key,
                          partition=control_partition)
            producer.flush()
            if context.attemptNumber() < options.crash_before_commit_attempts:
                # Test hook: die like a killed executor, leaving the transaction open.
                os._exit(CRASH_EXIT_STATUS)
            producer.commit_transaction()
        except BaseException:
            _abort_quietly(producer)
            raise
        return RowsWritten(count)
    finally:
        producer.close()


def _abort_quietly(producer: BlockingProducer) -> None:
    # A fenced or failed producer may not be able to abort; the next attempt's
    # init_transactions (or the transaction timeout) ends the transaction then.
    try:
        producer.abort_transaction()
    except Exception:  # noqa: BLE001 - the original failure is the one to report
        pass
