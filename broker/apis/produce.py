"""Produce (v3-9): append producers' batches to the leader logs, acks 0, 1 and all.

The records payload stays opaque: the log stamps offsets into it in place, straight in the
request frame when that is writable (the network layer gives every frame its own buffer),
else in one copy; only the 61-byte batch header is looked at here, and the CRC is checked by
the log while assigning offsets. Where a topic needs its records read (compaction keys,
timestamps the header cannot settle, a compression.type to convert to), the log's validator
does it and its refusals carry the per-record errors answered in `record_errors`.
"""

from __future__ import annotations

import logging
from typing import Any, Mapping, Sequence

import trio

from broker.apis.authorization import ALLOW_ALL, AclOperation, Authorization, ResourceType
from broker.apis.common import PARTITION_ERRORS, error_code_of, now_ms
from broker.log.errors import CorruptMessage, InvalidRecord
from broker.apis.request import CloseConnection, DecodedRequest, RequestContext, RequestRouter
from broker.replica.manager import ReplicaManager
from broker.replica.partition import Partition
from clients.protocol import ApiKey, ErrorCode
from clients.records.header import BATCH_HEADER_SIZE, parse_header, peek_batch_size
from clients.records.errors import CorruptRecordError

logger = logging.getLogger(__name__)

ZSTD = 4
_FIRST_VERSION_WITH_ZSTD = 7


class _Pending:
    """An acks=all partition waiting for its HW to pass `required_offset`."""

    __slots__ = ("entry", "partition", "required_offset", "leader_epoch")

    def __init__(self, entry: dict[str, Any], partition: Partition, required_offset: int) -> None:
        self.entry = entry
        self.partition = partition
        self.required_offset = required_offset
        self.leader_epoch = partition.leader_epoch


def _partition_entry(index: int) -> dict[str, Any]:
    return {"index": index, "error_code": ErrorCode.NONE, "base_offset": -1,
            "log_append_time_ms": -1, "log_start_offset": -1, "record_errors": [],
            "error_message": None}


def _fail(entry: dict[str, Any], code: int, message: str | None = None,
          record_errors: Sequence[tuple[int, str]] = ()) -> None:
    """Fail the partition; `record_errors` are the (batch index, message) of the records the
    log's validator refused (ProduceResponse v8+, KIP-467)."""
    entry["error_code"] = int(code)
    entry["error_message"] = message
    entry["record_errors"] = [{"batch_index": index, "batch_index_error_message": text}
                              for index, text in record_errors]


def _stampable(records: Any) -> bytearray | memoryview:
    """`records` itself when it is a writable byte view, else a copy the log may stamp."""
    if (isinstance(records, memoryview) and not records.readonly and records.format == "B"
            and records.c_contiguous):
        return records
    return bytearray(records)


def _check_payload(records: Any, version: int,
                   transactional_id: str | None) -> bytearray | memoryview:
    """The one v2 batch Kafka allows per partition from v3 on, writable for stamping."""
    if records is None or len(records) == 0:
        raise InvalidRecord("produce requests must carry exactly one record batch per partition")
    buf = _stampable(records)
    try:
        size = peek_batch_size(buf, 0)
        if size is None or size > len(buf) or len(buf) < BATCH_HEADER_SIZE:
            raise CorruptRecordError("truncated record batch")
        header = parse_header(buf, 0)
    except CorruptRecordError as exc:
        raise CorruptMessage(str(exc)) from None
    if size != len(buf):
        raise InvalidRecord("produce requests must carry exactly one record batch per partition")
    if header.compression == ZSTD and version < _FIRST_VERSION_WITH_ZSTD:
        exc = InvalidRecord(f"zstd needs produce v{_FIRST_VERSION_WITH_ZSTD} or later")
        exc.error_code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        raise exc
    if header.is_transactional and transactional_id is None:
        raise InvalidRecord("transactional records need a transactional id")
    return buf


class ProduceHandler:
    """Handles Produce against the local leader replicas."""

    def __init__(self, replicas: ReplicaManager, authz: Authorization = ALLOW_ALL) -> None:
        self._replicas = replicas
        self._authz = authz

    def register(self, router: RequestRouter) -> None:
        router.register(ApiKey.PRODUCE, self.handle, produce_error_body)

    async def handle(self, request: DecodedRequest, ctx: RequestContext) -> dict | None:
        body, version = request.body, request.api_version
        acks = int(body["acks"])
        transactional_id = body.get("transactional_id")
        authz = self._authz
        if transactional_id is not None and not authz.allowed(
                ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            if acks == 0:
                raise CloseConnection("acks=0 produce: transactional id not authorized")
            return produce_error_body(body, version, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        topic_data = body.get("topic_data") or ()
        writable = authz.allowed_names(ctx, AclOperation.WRITE, ResourceType.TOPIC,
                                       (t["name"] for t in topic_data))
        responses: list[dict[str, Any]] = []
        pending: list[_Pending] = []
        timestamp = now_ms()
        for topic in topic_data:
            name = topic["name"]
            entries: list[dict[str, Any]] = []
            responses.append({"name": name, "partition_responses": entries})
            for data in topic.get("partition_data") or ():
                entry = _partition_entry(data["index"])
                entries.append(entry)
                if name not in writable:
                    _fail(entry, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                    continue
                if acks not in (-1, 0, 1):
                    _fail(entry, ErrorCode.INVALID_REQUIRED_ACKS, f"acks must be -1, 0 or 1, not {acks}")
                    continue
                if transactional_id is not None:
                    _fail(entry, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                          "transactions are not supported by this broker")
                    continue
                self._append(name, data, entry, acks, version, transactional_id, timestamp, pending)
        if pending:
            await self._await_replication(pending, int(body.get("timeout_ms", 0)))
        if acks == 0:
            failed = [f"{r['name']}-{e['index']}: {ErrorCode.from_code(e['error_code']).name}"
                      for r in responses for e in r["partition_responses"] if e["error_code"]]
            if failed:
                # The producer reads no answer: closing is how it learns to refresh metadata.
                raise CloseConnection(f"acks=0 produce failed ({', '.join(failed)})")
            return None
        return {"responses": responses, "throttle_time_ms": 0}

    def _append(self, topic: str, data: dict[str, Any], entry: dict[str, Any], acks: int,
                version: int, transactional_id: str | None, timestamp: int,
                pending: list[_Pending]) -> None:
        try:
            partition = self._replicas.leader_partition(topic, data["index"])
            batches = _check_payload(data.get("records"), version, transactional_id)
            result = partition.append_as_leader(batches, acks, timestamp)
        except PARTITION_ERRORS as exc:
            _fail(entry, error_code_of(exc), str(exc), getattr(exc, "record_errors", ()))
            logger.debug("produce to %s-%d failed: %s", topic, data["index"], exc)
            return
        entry["base_offset"] = result.first_offset
        entry["log_append_time_ms"] = result.log_append_time
        entry["log_start_offset"] = result.log_start_offset
        if not result.duplicate:
            self._replicas.notify(partition.key)
        if acks == -1 and result.last_offset >= 0:
            pending.append(_Pending(entry, partition, result.last_offset + 1))

    async def _await_replication(self, pending: list[_Pending], timeout_ms: int) -> None:
        """Kafka's DelayedProduce: wait until each HW passes its batch, or time out."""
        deadline = trio.current_time() + max(timeout_ms, 0) / 1000
        with self._replicas.purgatory.watch(p.partition.key for p in pending) as waiter:
            while True:
                pending = [p for p in pending if not self._settled(p)]
                if not pending or not await waiter.wait(deadline):
                    break
        for item in pending:
            _fail(item.entry, ErrorCode.REQUEST_TIMED_OUT,
                  f"the high watermark did not reach {item.required_offset} within {timeout_ms} ms")

    def _settled(self, item: _Pending) -> bool:
        partition = item.partition
        current = self._replicas.get_partition(*partition.key)
        if current is not partition or not partition.is_leader or partition.leader_epoch != item.leader_epoch:
            _fail(item.entry, ErrorCode.NOT_LEADER_OR_FOLLOWER, "leadership moved while waiting for acks")
            return True
        if partition.high_watermark < item.required_offset:
            return False
        if partition.is_under_min_isr:
            _fail(item.entry, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                  "the ISR shrank below min.insync.replicas after the append")
        return True


def produce_error_body(body: Mapping[str, Any], version: int, error_code: int,
                       message: str | None = None) -> dict:
    """Every partition of the request with `error_code`."""
    topics = body.get("topic_data") or []
    return {"throttle_time_ms": 0, "responses": [
        {"name": t["name"], "partition_responses": [
            {**_partition_entry(p["index"]), "error_code": error_code}
            for p in t.get("partition_data") or ()]}
        for t in topics]}
