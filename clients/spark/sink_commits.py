"""The exactly-once sink's control topic: which micro-batch each task last committed.

One compacted topic holds, per (write id, task partition), the last batch id committed by
that task; the record is written inside the task's transaction, so it becomes visible
exactly when the task's rows do. Compaction keeps one record per key. A task reads its
key's partition with read_committed before it writes.
"""

from __future__ import annotations

import json
import time
import zlib
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from clients.admin import BlockingAdmin
from clients.admin.operations import NewTopic
from clients.protocol import ErrorCode, KafkaError
from clients.spark.arrow_records import TransactionFilter, decode_fetched
from clients.spark.cluster import ClusterClient

# Partitions of a control topic the sink creates; the key's hash picks one.
CONTROL_TOPIC_PARTITIONS = 10
_FETCH_WAIT_MS = 200
_RETRY_PAUSE_S = 0.1
# A control topic created a moment ago may still be electing its leaders.
_LOOKUP_RETRIES = 50
_LOOKUP_RETRY_INTERVAL_MS = 100
_LEADER_ERRORS = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
                            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.FENCED_LEADER_EPOCH,
                            ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.NETWORK_EXCEPTION})


@dataclass(frozen=True)
class TaskKey:
    """One task's identity across attempts and restarts: the write (a streaming query's id,
    or a batch write's id) and the Spark partition it writes."""

    write_id: str
    partition: int

    def encoded(self) -> bytes:
        return json.dumps({"id": self.write_id, "partition": self.partition},
                          sort_keys=True, separators=(",", ":")).encode()

    def transactional_id(self) -> str:
        return f"raftka-spark-{self.write_id}-{self.partition}"

    def control_partition(self, partitions: int) -> int:
        return zlib.crc32(self.encoded()) % partitions


def commit_record(key: TaskKey, batch_id: int, records: int) -> tuple[bytes, bytes]:
    """The control record's key and value for ``batch_id`` of ``key``'s task."""
    value = {"id": key.write_id, "partition": key.partition, "batchId": batch_id,
             "records": records}
    return key.encoded(), json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def batch_of(value: bytes) -> int:
    """The batch id a control record's value names."""
    return int(json.loads(value)["batchId"])


def ensure_control_topic(kafka: dict[str, str], topic: str) -> None:
    """Create the compacted control topic unless it exists (racing tasks may both try)."""
    client = ClusterClient(kafka)
    try:
        found = client.refresh([topic]).topics.get(topic)
        if found is not None and found.error_code == ErrorCode.NONE and found.partitions:
            return
    finally:
        client.close()
    admin_config = {k: v for k, v in kafka.items()
                    if k in ("bootstrap.servers", "client.id", "request.timeout.ms")
                    or k.startswith(("security.", "ssl.", "sasl."))}
    with BlockingAdmin(admin_config) as admin:
        try:
            admin.create_topics([NewTopic(topic, CONTROL_TOPIC_PARTITIONS, -1,
                                          {"cleanup.policy": "compact"})])
        except KafkaError as exc:
            if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                raise


def last_committed_batch(kafka: dict[str, str], topic: str, partition: int, key: TaskKey,
                         timeout_s: float) -> int | None:
    """The last batch id committed for ``key`` (None: none yet), read with read_committed
    up to the high watermark seen now: a transaction open in that range (another task's)
    is waited for, up to ``timeout_s``, so no commit earlier than this call is missed."""
    client = ClusterClient(kafka, read_committed=True, retries=_LOOKUP_RETRIES,
                           retry_interval_ms=_LOOKUP_RETRY_INTERVAL_MS)
    deadline = time.monotonic() + timeout_s
    try:
        tp = (topic, partition)
        wanted = key.encoded()
        position = client.earliest([tp])[tp]
        target: int | None = None
        txn_filter = TransactionFilter()
        found: int | None = None
        max_bytes = int(kafka.get("max.partition.fetch.bytes", 1048576))
        while target is None or position < target:
            answer = client.fetch(tp, position, _FETCH_WAIT_MS, max_bytes)
            code = ErrorCode.from_code(answer.get("error_code", 0))
            if code == ErrorCode.OFFSET_OUT_OF_RANGE:  # compaction or retention moved the start
                position = client.earliest([tp])[tp]
                continue
            if code != ErrorCode.NONE:
                if not code.retriable and code not in _LEADER_ERRORS:
                    raise KafkaError(code, f"reading the control topic {topic}")
                _check_deadline(deadline, topic, tp[1], position)
                client.refresh([topic])
                time.sleep(_RETRY_PAUSE_S)
                continue
            if target is None:
                target = answer["high_watermark"]
            txn_filter.add(answer.get("aborted_transactions"))
            decoded = decode_fetched(topic, tp[1], answer.get("records"), position, target,
                                     False, txn_filter)
            if decoded.batch is not None:
                found = last_batch_in(decoded.batch, wanted, found)
            if decoded.next_offset > position:
                position = decoded.next_offset
            elif position < target:
                _check_deadline(deadline, topic, tp[1], position)
        return found
    finally:
        client.close()


def last_batch_in(batch: pa.RecordBatch, wanted: bytes, found: int | None) -> int | None:
    """The batch id of the last control record keyed ``wanted`` in ``batch`` (columns
    key, value first), else ``found``."""
    keys = batch.column(0)
    hits = pc.indices_nonzero(pc.fill_null(pc.equal(keys, pa.scalar(wanted, pa.binary())),
                                           False))
    if len(hits) == 0:
        return found
    return batch_of(batch.column(1)[hits[-1].as_py()].as_py())


def _check_deadline(deadline: float, topic: str, partition: int, position: int) -> None:
    if time.monotonic() > deadline:
        raise TimeoutError(f"the control topic {topic}-{partition} stayed unreadable at "
                           f"offset {position} (an open transaction holds it back)")
