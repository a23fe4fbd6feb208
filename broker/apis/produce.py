"""Produce (v3-9): append producers' batches to the leader logs, acks 0, 1 and all.

The records payload stays opaque: the log stamps offsets into it in place, straight in the
request frame when that is writable (the network layer gives every frame its own buffer),
else in one copy; only the 61-byte batch header is looked at here, and the CRC is checked by
the log while assigning offsets. Where a topic needs its records read (compaction keys,
timestamps the header cannot settle, a compression.type to convert to), the log's validator
does it and its refusals carry the per-record errors answered in `record_errors`.

Transactional produce: with a `TransactionVerifier` installed, a batch that would open the
producer's transaction in a partition is appended only once the coordinator confirmed the
partition is in the transaction (KIP-890); the log refuses a stale producer epoch
(INVALID_PRODUCER_EPOCH) and a non-transactional write inside an open transaction.
"""

from __future__ import annotations

import logging
from typing import Any, Mapping, Sequence

import trio

from broker.apis.authorization import ALLOW_ALL, AclOperation, Authorization, ResourceType
from broker.apis.common import PARTITION_ERRORS, error_code_of
from broker.log.errors import CorruptMessage, InvalidRecord, KafkaStorageError
from broker.log.flush_plan import flush_off_loop
from broker.log.partition_log import PartitionLog
from broker.apis.replication_wait import PendingAppend, await_replication
from broker.apis.request import CloseConnection, DecodedRequest, RequestContext, RequestRouter
from broker.replica.manager import ReplicaManager
from broker.replica.partition import Partition
from broker.replica.txn_verification import TransactionVerifier, VerificationGuard, produce_error_for
from clients.clock import wall_clock_ms
from clients.protocol import ApiKey, ErrorCode
from clients.records.header import BATCH_HEADER_SIZE, parse_header, peek_batch_size
from clients.records.errors import CorruptRecordError

logger = logging.getLogger(__name__)

ZSTD = 4
_FIRST_VERSION_WITH_ZSTD = 7


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

    def __init__(self, replicas: ReplicaManager, verifier: TransactionVerifier | None = None,
                 authz: Authorization = ALLOW_ALL) -> None:
        self._replicas = replicas
        self.verifier = verifier
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
        pending: list[PendingAppend] = []
        flushes: list[tuple[dict[str, Any], PartitionLog]] = []
        verdicts: dict[tuple[str, int], VerificationGuard | int] = {}
        if transactional_id is not None and self.verifier is not None and acks in (-1, 0, 1):
            verdicts = await self._verify(body, transactional_id)
        timestamp = wall_clock_ms()
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
                verdict = verdicts.get((name, data["index"]))
                if isinstance(verdict, int):
                    _fail(entry, verdict, "the partition is not part of the producer's transaction"
                          if verdict == ErrorCode.INVALID_TXN_STATE else "transaction verification failed")
                    continue
                self._append(name, data, entry, acks, version, transactional_id, timestamp, pending,
                             verdict, flushes)
        if flushes:
            await _flush_appended(flushes)
            pending = [p for p in pending if p.entry["error_code"] == ErrorCode.NONE]
        if pending:
            await await_replication(self._replicas, pending, int(body.get("timeout_ms", 0)), _fail)
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
                pending: list[PendingAppend], verification: VerificationGuard | None,
                flushes: list[tuple[dict[str, Any], PartitionLog]]) -> None:
        try:
            partition = self._replicas.leader_partition(topic, data["index"])
            batches = _check_payload(data.get("records"), version, transactional_id)
            # A flush.messages fsync waits until every partition of the request is appended,
            # then runs off the event loop (a slow disk must not hold up other partitions).
            high_watermark = partition.high_watermark
            with partition.log.flush_deferred():
                result = partition.append_as_leader(batches, acks, timestamp, verification)
            if partition.log.flush_pending:
                flushes.append((entry, partition.log))
        except PARTITION_ERRORS as exc:
            _fail(entry, error_code_of(exc), str(exc), getattr(exc, "record_errors", ()))
            logger.debug("produce to %s-%d failed: %s", topic, data["index"], exc)
            return
        entry["base_offset"] = result.first_offset
        entry["log_append_time_ms"] = result.log_append_time
        entry["log_start_offset"] = result.log_start_offset
        if not result.duplicate:
            self._replicas.notify_appended(partition, high_watermark)
        if acks == -1 and result.last_offset >= 0:
            pending.append(PendingAppend(entry, partition, result.last_offset + 1))


    async def _verify(self, body: dict[str, Any], transactional_id: str
                      ) -> dict[tuple[str, int], VerificationGuard | int]:
        """KIP-890: ask the coordinator about each partition where the producer's
        transactional batch would open a transaction; a guard per verified partition, an
        error code per refused one. Malformed payloads are left to the append to answer."""
        guards: dict[tuple[str, int], VerificationGuard] = {}
        partitions: dict[tuple[str, int], Partition] = {}
        producer: tuple[int, int] | None = None
        for topic in body.get("topic_data") or ():
            for data in topic.get("partition_data") or ():
                records = data.get("records")
                try:
                    partition = self._replicas.leader_partition(topic["name"], data["index"])
                    header = parse_header(records, 0) if records is not None else None
                except (CorruptRecordError, *PARTITION_ERRORS):
                    continue
                if header is None or not header.is_transactional or header.producer_id < 0:
                    continue
                producer = producer or (header.producer_id, header.producer_epoch)
                if partition.needs_verification(header.producer_id):
                    guards[partition.key] = partition.start_verification(header.producer_id)
                    partitions[partition.key] = partition
        if not guards or producer is None or self.verifier is None:
            return dict(guards)
        try:
            codes = await self.verifier.verify(transactional_id, producer[0], producer[1], list(guards))
        except Exception:  # noqa: BLE001 - the coordinator is unreachable: the producer retries
            logger.warning("verifying the transaction of %r failed", transactional_id, exc_info=True)
            codes = {key: int(ErrorCode.COORDINATOR_NOT_AVAILABLE) for key in guards}
        verdicts: dict[tuple[str, int], VerificationGuard | int] = {}
        for key, guard in guards.items():
            code = codes.get(key, int(ErrorCode.INVALID_TXN_STATE))
            if code == ErrorCode.NONE:
                verdicts[key] = guard
            else:
                verdicts[key] = produce_error_for(code)
                partitions[key].end_verification(guard)
        return verdicts


async def _flush_appended(flushes: list[tuple[dict[str, Any], PartitionLog]]) -> None:
    """The deferred flushes of a request's appends, concurrently; an entry whose flush
    failed answers KAFKA_STORAGE_ERROR (its log went offline), as Kafka's would."""
    async def flush(entry: dict[str, Any], log: PartitionLog) -> None:
        try:
            await flush_off_loop(log)
        except KafkaStorageError as exc:
            _fail(entry, ErrorCode.KAFKA_STORAGE_ERROR, str(exc))

    async with trio.open_nursery() as nursery:
        for entry, log in flushes:
            nursery.start_soon(flush, entry, log)


def produce_error_body(body: Mapping[str, Any], version: int, error_code: int,
                       message: str | None = None) -> dict:
    """Every partition of the request with `error_code`."""
    topics = body.get("topic_data") or []
    return {"throttle_time_ms": 0, "responses": [
        {"name": t["name"], "partition_responses": [
            {**_partition_entry(p["index"]), "error_code": error_code}
            for p in t.get("partition_data") or ()]}
        for t in topics]}
