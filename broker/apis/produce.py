"""Produce (v3-9): authorize, hand the partitions to the replica manager's `append_records`
(acks 0, 1 and all), and answer what it reports.

The records payload stays opaque: the replica manager and the log stamp offsets into it in
place, straight in the request frame when that is writable (the network layer gives every
frame its own buffer). Where a topic needs its records read (compaction keys, timestamps the
header cannot settle, a compression.type to convert to), the log's validator does it and its
refusals carry the per-record errors answered in `record_errors`.

Transactional produce: with a `TransactionVerifier` installed, a batch that would open the
producer's transaction in a partition is appended only once the coordinator confirmed the
partition is in the transaction (KIP-890); the log refuses a stale producer epoch
(INVALID_PRODUCER_EPOCH) and a non-transactional write inside an open transaction.
"""

from __future__ import annotations

import trio

from broker.apis.authorization import ALLOW_ALL, AclOperation, Authorization, ResourceType
from broker.apis.request import CloseConnection, DecodedRequest, RequestContext, RequestRouter
from broker.replica.append import AppendEntry, AppendOrigin, append_records
from broker.replica.manager import ReplicaManager
from broker.replica.txn_verification import TransactionVerifier
from clients.protocol import ApiKey, ErrorCode
from clients.protocol.messages.produce import ProduceRequestData, ProduceResponseData

PartitionAnswer = ProduceResponseData.PartitionProduceResponse
RecordError = ProduceResponseData.BatchIndexAndErrorMessage

_FIRST_VERSION_WITH_ZSTD = 7
# A request naming more partitions lets the other tasks run between appending and answering.
_YIELD_AFTER_PARTITIONS = 1000


def _answer(entry: AppendEntry) -> PartitionAnswer:
    """The partition's response: its offsets, or its error with the records the log's
    validator refused (ProduceResponse v8+ record_errors, KIP-467)."""
    refused = entry.record_errors
    return PartitionAnswer(
        index=entry.partition, error_code=entry.error_code, base_offset=entry.base_offset,
        log_append_time_ms=entry.log_append_time_ms, log_start_offset=entry.log_start_offset,
        record_errors=[RecordError(batch_index=index, batch_index_error_message=text)
                       for index, text in refused] if refused else [],
        error_message=entry.error_message)


class ProduceHandler:
    """Handles Produce against the local leader replicas."""

    def __init__(self, replicas: ReplicaManager, verifier: TransactionVerifier | None = None,
                 authz: Authorization = ALLOW_ALL) -> None:
        self._replicas = replicas
        self.verifier = verifier
        self._authz = authz

    def register(self, router: RequestRouter) -> None:
        router.register(ApiKey.PRODUCE, self.handle, produce_error_body)

    async def handle(self, request: DecodedRequest,
                     ctx: RequestContext) -> ProduceResponseData | None:
        body: ProduceRequestData = request.body
        version, acks, transactional_id = request.api_version, body.acks, body.transactional_id
        authz = self._authz
        if transactional_id is not None and not authz.allowed(
                ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            if acks == 0:
                raise CloseConnection("acks=0 produce: transactional id not authorized")
            return produce_error_body(body, version, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        topic_data = body.topic_data
        writable = authz.allowed_names(ctx, AclOperation.WRITE, ResourceType.TOPIC,
                                       (t.name for t in topic_data))
        entries: list[AppendEntry] = []
        for topic in topic_data:
            name = topic.name
            for data in topic.partition_data:
                entry = AppendEntry(name, data.index, data.records)
                if name not in writable:
                    entry.fail(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                entries.append(entry)
                # The entry holds the records now; the request lets go of them so that the
                # frame can be freed once they are in the log (see append_records).
                data.records = None
        await append_records(self._replicas, entries, acks, body.timeout_ms,
                             AppendOrigin.CLIENT, transactional_id=transactional_id,
                             verifier=self.verifier,
                             zstd_allowed=version >= _FIRST_VERSION_WITH_ZSTD)
        if acks == 0:
            failed = [f"{e.topic}-{e.partition}: {ErrorCode.from_code(e.error_code).name}"
                      for e in entries if e.error_code]
            if failed:
                # The producer reads no answer: closing is how it learns to refresh metadata.
                raise CloseConnection(f"acks=0 produce failed ({', '.join(failed)})")
            return None
        if len(entries) > _YIELD_AFTER_PARTITIONS:
            # Appended: the node's other clients may run before the answer is built.
            await trio.sleep(0)
        answers = iter(entries)
        return ProduceResponseData(responses=[
            ProduceResponseData.TopicProduceResponse(
                name=topic.name,
                partition_responses=[_answer(next(answers)) for _ in topic.partition_data])
            for topic in topic_data])


def produce_error_body(body: ProduceRequestData, version: int, error_code: int,
                       message: str | None = None) -> ProduceResponseData:
    """Every partition of the request with `error_code`."""
    return ProduceResponseData(responses=[
        ProduceResponseData.TopicProduceResponse(name=t.name, partition_responses=[
            PartitionAnswer(index=p.index, error_code=error_code, base_offset=-1)
            for p in t.partition_data])
        for t in body.topic_data])
