"""An executor's task: fetch one partition's offset range and yield Arrow record batches."""

from __future__ import annotations

import logging
import time
from typing import Iterator

import pyarrow as pa

from clients.common.cluster import BrokerNode, ClusterMetadata, PartitionInfo, TopicInfo
from clients.protocol import ErrorCode, KafkaError, ZERO_UUID
from clients.spark.arrow_records import TransactionFilter, decode_fetched
from clients.spark.cluster import ClusterClient
from clients.spark.planning import DATA_LOSS_HINT, DataLossError, KafkaInputPartition

logger = logging.getLogger(__name__)

_RETRY_PAUSE_S = 0.1
_LEADER_ERRORS = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
                            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.FENCED_LEADER_EPOCH,
                            ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.NETWORK_EXCEPTION})


def _seed_leader(client: ClusterClient, task: KafkaInputPartition) -> None:
    """Start from the leader seen at planning: no metadata request unless it moved."""
    if task.leader is None:
        return
    node_id, host, port = task.leader
    info = PartitionInfo(task.topic, task.partition, node_id, -1, (node_id,), (node_id,))
    client.cluster = ClusterMetadata(
        {node_id: BrokerNode(node_id, host, port)},
        {task.topic: TopicInfo(task.topic, ZERO_UUID, 0, False, {task.partition: info})})


def read_task(task: KafkaInputPartition) -> Iterator[pa.RecordBatch]:
    """The records of ``task`` in offset order. Offsets before the log start raise
    DataLossError (failOnDataLoss=true) or are skipped; compaction gaps, transaction markers
    and (under read_committed) aborted transactions are simply not rows."""
    settings = task.settings
    client = ClusterClient(settings.kafka, settings.read_committed)
    max_bytes = int(settings.kafka.get("max.partition.fetch.bytes", 1048576))
    max_wait_ms = int(settings.kafka.get("fetch.max.wait.ms", 500))
    verify_crc = settings.kafka.get("check.crcs", "true").lower() != "false"
    txn_filter = TransactionFilter() if settings.read_committed else None
    tp = (task.topic, task.partition)
    _seed_leader(client, task)
    position = task.start
    stalled_since = time.monotonic()
    try:
        while position < task.end:
            answer = client.fetch(tp, position, max_wait_ms, max_bytes)
            code = ErrorCode.from_code(answer.get("error_code", 0))
            if code == ErrorCode.OFFSET_OUT_OF_RANGE:
                position = _after_out_of_range(client, task, position)
                continue
            if code != ErrorCode.NONE:
                if code not in _LEADER_ERRORS and not code.retriable:
                    raise KafkaError(code, f"fetch of {task.topic}-{task.partition} at offset "
                                           f"{position}")
                _check_stall(task, position, stalled_since)
                client.cluster = ClusterMetadata()
                time.sleep(_RETRY_PAUSE_S)
                continue
            if txn_filter is not None:
                txn_filter.add(answer.get("aborted_transactions"))
            decoded = decode_fetched(task.topic, task.partition, answer.get("records"),
                                     position, task.end, settings.include_headers, txn_filter,
                                     verify_crc=verify_crc)
            if decoded.batch is not None:
                yield decoded.batch
            if decoded.next_offset > position:
                position = decoded.next_offset
                stalled_since = time.monotonic()
                continue
            available = answer.get("last_stable_offset", -1) if settings.read_committed else -1
            if available < 0:
                available = answer.get("high_watermark", -1)
            if 0 <= available <= position:
                # The range was planned up to offsets the log no longer has (truncated).
                _lost(task, position, task.end, f"the log now ends at offset {available}")
                return
            _check_stall(task, position, stalled_since)
    finally:
        client.close()


def _after_out_of_range(client: ClusterClient, task: KafkaInputPartition, position: int) -> int:
    """Where to go on after OFFSET_OUT_OF_RANGE at ``position``."""
    tp = (task.topic, task.partition)
    earliest = client.earliest([tp])[tp]
    if position < earliest:
        _lost(task, position, min(earliest, task.end),
              f"the log start offset is now {earliest}")
        return earliest
    latest = client.latest([tp])[tp]
    _lost(task, position, task.end, f"the log now ends at offset {latest}")
    return task.end


def _lost(task: KafkaInputPartition, first: int, end: int, why: str) -> None:
    message = (f"partition {task.topic}-{task.partition}: offsets {first} to {end - 1} can no "
               f"longer be read ({why}). {DATA_LOSS_HINT}")
    if task.settings.fail_on_data_loss:
        raise DataLossError(message)
    logger.warning("skipping lost records: %s", message)


def _check_stall(task: KafkaInputPartition, position: int, since: float) -> None:
    if time.monotonic() - since > task.settings.poll_timeout_ms / 1000:
        raise TimeoutError(f"partition {task.topic}-{task.partition}: no records at offset "
                           f"{position} within kafkaConsumer.pollTimeoutMs "
                           f"({task.settings.poll_timeout_ms} ms)")
