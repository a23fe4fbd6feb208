"""The transactional APIs on the wire: AddPartitionsToTxn v0-5 (the client form of v0-3
and the batched broker form of v4+, with verify_only), AddOffsetsToTxn v0-4, EndTxn v0-4,
TxnOffsetCommit v0-4, DescribeTransactions v0 and ListTransactions v0-1.

Each checks what Kafka's KafkaApis checks: the client forms need WRITE on the transactional
id (TxnOffsetCommit and AddOffsetsToTxn also READ on the group, AddPartitionsToTxn WRITE on
each topic, TxnOffsetCommit READ on each topic), the broker form of AddPartitionsToTxn (v4+)
needs CLUSTER_ACTION, and the describing APIs show only what the principal may DESCRIBE.
"""

from __future__ import annotations

import copy
import logging
from typing import Callable, Iterable, Mapping

from broker.apis.authorization import ALLOW_ALL, AclOperation, Authorization, ResourceType
from broker.apis.request import DecodedRequest, ErrorBody, RequestContext, RequestRouter
from broker.group.coordinator import GroupCoordinator
from broker.group.routing import CONSUMER_OFFSETS_TOPIC
from broker.txn.coordinator import TransactionCoordinator
from clients.protocol import ApiKey, ErrorCode
from clients.protocol.messages.add_offsets_to_txn import (
    AddOffsetsToTxnRequestData,
    AddOffsetsToTxnResponseData,
)
from clients.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequestData,
    AddPartitionsToTxnResponseData,
)
from clients.protocol.messages.describe_transactions import (
    DescribeTransactionsRequestData,
    DescribeTransactionsResponseData,
)
from clients.protocol.messages.end_txn import EndTxnRequestData, EndTxnResponseData
from clients.protocol.messages.list_transactions import (
    ListTransactionsRequestData,
    ListTransactionsResponseData,
)
from clients.protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequestData,
    TxnOffsetCommitResponseData,
)
from metadata.describe import INTERNAL_TOPICS
from metadata.image import MetadataImage

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
AddPartitions = AddPartitionsToTxnResponseData
TxnOffsets = TxnOffsetCommitResponseData
TxnState = DescribeTransactionsResponseData.TransactionState


def fenced_for_version(code: int, version: int, first_with_fenced: int = 2) -> int:
    """PRODUCER_FENCED for clients that know it; INVALID_PRODUCER_EPOCH, which meant the
    same, for older request versions (as Kafka's request layer answers)."""
    if code == ErrorCode.PRODUCER_FENCED and version < first_with_fenced:
        return int(ErrorCode.INVALID_PRODUCER_EPOCH)
    return int(code)


def txn_offset_commit_code(code: int, version: int) -> int:
    """COORDINATOR_NOT_AVAILABLE for COORDINATOR_LOAD_IN_PROGRESS in TxnOffsetCommit before
    v2, which producers before that version may not handle, as Kafka's request layer
    answers; the code unchanged otherwise."""
    if code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS and version < 2:
        return int(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return int(code)


def _wanted(topics: Iterable[AddPartitionsToTxnRequestData.AddPartitionsToTxnTopic]
            ) -> list[TopicPartition]:
    return [(t.name, p) for t in topics for p in t.partitions]


def _topic_results(codes: Mapping[TopicPartition, int]
                   ) -> list[AddPartitions.AddPartitionsToTxnTopicResult]:
    by_topic: dict[str, list[AddPartitions.AddPartitionsToTxnPartitionResult]] = {}
    for (topic, partition), code in codes.items():
        by_topic.setdefault(topic, []).append(AddPartitions.AddPartitionsToTxnPartitionResult(
            partition_index=partition, partition_error_code=int(code)))
    return [AddPartitions.AddPartitionsToTxnTopicResult(name=t, results_by_partition=ps)
            for t, ps in by_topic.items()]


class TransactionHandlers:
    """Registers the transactional APIs, answering from the transaction coordinator (and
    the group coordinator for TxnOffsetCommit)."""

    def __init__(self, transactions: TransactionCoordinator, groups: GroupCoordinator,
                 image: Callable[[], MetadataImage], authz: Authorization = ALLOW_ALL) -> None:
        self.transactions = transactions
        self.groups = groups
        self._image = image
        self._authz = authz

    def _txn_id_refusal(self, ctx: RequestContext, operation: AclOperation,
                        transactional_id: str) -> int:
        return self._authz.refusal(ctx, operation, ResourceType.TRANSACTIONAL_ID,
                                   transactional_id)

    def _writable(self, ctx: RequestContext, topics: set[str]) -> set[str]:
        """The topics a client may add to its transaction. Under the authorizer, as Kafka,
        never an internal topic (that takes AddOffsetsToTxn), not even for a super user."""
        if not self._authz.enabled:
            return topics
        return self._topics_allowed(ctx, AclOperation.WRITE, topics - INTERNAL_TOPICS)

    def _topics_allowed(self, ctx: RequestContext, operation: AclOperation,
                        topics: Iterable[str]) -> set[str]:
        return self._authz.allowed_names(ctx, operation, ResourceType.TOPIC, set(topics))

    def register(self, router: RequestRouter) -> None:
        for api_key, handler in (
                (ApiKey.ADD_PARTITIONS_TO_TXN, self.add_partitions_to_txn),
                (ApiKey.ADD_OFFSETS_TO_TXN, self.add_offsets_to_txn),
                (ApiKey.END_TXN, self.end_txn),
                (ApiKey.TXN_OFFSET_COMMIT, self.txn_offset_commit),
                (ApiKey.DESCRIBE_TRANSACTIONS, self.describe_transactions),
                (ApiKey.LIST_TRANSACTIONS, self.list_transactions)):
            router.register(api_key, handler, TRANSACTION_ERRORS[api_key])

    async def _add(self, transactional_id: str, producer_id: int, epoch: int,
                   wanted: list[TopicPartition], verify_only: bool,
                   writable: set[str] | None = None) -> dict[TopicPartition, int]:
        """Per-partition codes of one transaction's AddPartitionsToTxn entry; `writable`
        (the client form) names the topics the principal may WRITE."""
        if verify_only:
            return self.transactions.verify_partitions(transactional_id, producer_id, epoch,
                                                       wanted)
        image = self._image()
        failed: dict[TopicPartition, int] = {}
        for tp in wanted:
            if writable is not None and tp[0] not in writable:
                failed[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif (topic := image.topic(tp[0])) is None or tp[1] not in topic.partitions:
                failed[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if failed:
            # Kafka adds none of them: the failed ones say why, the others were not tried.
            return {tp: failed.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in wanted}
        code = await self.transactions.add_partitions(transactional_id, producer_id, epoch,
                                                      wanted)
        return {tp: code for tp in wanted}

    async def add_partitions_to_txn(self, request: DecodedRequest,
                                    ctx: RequestContext) -> AddPartitionsToTxnResponseData:
        body: AddPartitionsToTxnRequestData = request.body
        version = request.api_version
        if version < 4:
            transactional_id = body.v3_and_below_transactional_id
            wanted = _wanted(body.v3_and_below_topics)
            refused = self._txn_id_refusal(ctx, AclOperation.WRITE, transactional_id)
            if refused:
                return add_partitions_to_txn_error(body, version, refused)
            codes = await self._add(transactional_id, body.v3_and_below_producer_id,
                                    body.v3_and_below_producer_epoch, wanted, False,
                                    self._writable(ctx, {t for t, _ in wanted}))
            codes = {tp: fenced_for_version(c, version) for tp, c in codes.items()}
            return AddPartitionsToTxnResponseData(
                results_by_topic_v3_and_below=_topic_results(codes))
        # The batched form comes from brokers verifying transactional produce (KIP-890).
        if not self._authz.cluster(ctx, AclOperation.CLUSTER_ACTION):
            return add_partitions_to_txn_error(body, version,
                                               ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        results = []
        for txn in body.transactions:
            codes = await self._add(txn.transactional_id, txn.producer_id, txn.producer_epoch,
                                    _wanted(txn.topics), txn.verify_only)
            results.append(AddPartitions.AddPartitionsToTxnResult(
                transactional_id=txn.transactional_id, topic_results=_topic_results(codes)))
        return AddPartitionsToTxnResponseData(results_by_transaction=results)

    async def add_offsets_to_txn(self, request: DecodedRequest,
                                 ctx: RequestContext) -> AddOffsetsToTxnResponseData:
        body: AddOffsetsToTxnRequestData = request.body
        refused = (self._txn_id_refusal(ctx, AclOperation.WRITE, body.transactional_id)
                   or self._authz.refusal(ctx, AclOperation.READ, ResourceType.GROUP,
                                          body.group_id))
        if refused:
            return AddOffsetsToTxnResponseData(error_code=int(refused))
        partition = self.groups.engine.partition_for(body.group_id)
        code = await self.transactions.add_partitions(
            body.transactional_id, body.producer_id, body.producer_epoch,
            [(CONSUMER_OFFSETS_TOPIC, partition)])
        return AddOffsetsToTxnResponseData(
            error_code=fenced_for_version(code, request.api_version))

    async def end_txn(self, request: DecodedRequest, ctx: RequestContext) -> EndTxnResponseData:
        body: EndTxnRequestData = request.body
        refused = self._txn_id_refusal(ctx, AclOperation.WRITE, body.transactional_id)
        if refused:
            return EndTxnResponseData(error_code=int(refused))
        code = await self.transactions.end_transaction(
            body.transactional_id, body.producer_id, body.producer_epoch, body.committed)
        return EndTxnResponseData(error_code=fenced_for_version(code, request.api_version))

    async def txn_offset_commit(self, request: DecodedRequest,
                                ctx: RequestContext) -> TxnOffsetCommitResponseData:
        body: TxnOffsetCommitRequestData = request.body
        version = request.api_version
        refused = (self._txn_id_refusal(ctx, AclOperation.WRITE, body.transactional_id)
                   or self._authz.refusal(ctx, AclOperation.READ, ResourceType.GROUP,
                                          body.group_id))
        if refused:
            return txn_offset_commit_error(body, version, refused)
        readable = self._topics_allowed(ctx, AclOperation.READ, (t.name for t in body.topics))
        allowed = [t for t in body.topics if t.name in readable]
        denied = [t for t in body.topics if t.name not in readable]
        codes: dict[TopicPartition, int] = {
            (t.name, p.partition_index): ErrorCode.TOPIC_AUTHORIZATION_FAILED
            for t in denied for p in t.partitions}
        if allowed or not denied:
            allowed_body = copy.copy(body)
            allowed_body.topics = allowed
            code = txn_offset_commit_code(self.groups.coordinator_error(body.group_id), version)
            if code:
                return _merge_topics(txn_offset_commit_error(allowed_body, version, code), codes)
            codes.update((await self.groups.commit_txn_offsets(allowed_body,
                                                               self._topic_exists)).codes)
        topics: dict[str, list[TxnOffsets.TxnOffsetCommitResponsePartition]] = {}
        for (topic, partition), c in codes.items():
            topics.setdefault(topic, []).append(TxnOffsets.TxnOffsetCommitResponsePartition(
                partition_index=partition, error_code=txn_offset_commit_code(c, version)))
        return TxnOffsetCommitResponseData(topics=[
            TxnOffsets.TxnOffsetCommitResponseTopic(name=name, partitions=parts)
            for name, parts in topics.items()])

    def _topic_exists(self, topic: str) -> bool:
        return self._image().topic(topic) is not None

    async def describe_transactions(self, request: DecodedRequest, ctx: RequestContext
                                    ) -> DescribeTransactionsResponseData:
        body: DescribeTransactionsRequestData = request.body
        return DescribeTransactionsResponseData(
            transaction_states=[self._describe(ctx, t) for t in body.transactional_ids])

    def _describe(self, ctx: RequestContext, transactional_id: str) -> TxnState:
        refused = self._txn_id_refusal(ctx, AclOperation.DESCRIBE, transactional_id)
        if refused:
            return _txn_state_error(transactional_id, refused)
        state = self.transactions.describe(transactional_id)
        if self._authz.enabled and state.topics:
            # As Kafka: partitions of topics the principal may not describe are left out.
            visible = self._topics_allowed(ctx, AclOperation.DESCRIBE,
                                           (t.topic for t in state.topics))
            state.topics = [t for t in state.topics if t.topic in visible]
        return state

    async def list_transactions(self, request: DecodedRequest,
                                ctx: RequestContext) -> ListTransactionsResponseData:
        body: ListTransactionsRequestData = request.body
        unknown, found = self.transactions.list_transactions(
            list(body.state_filters), list(body.producer_id_filters), body.duration_filter)
        if self._authz.enabled:
            visible = self._authz.allowed_names(ctx, AclOperation.DESCRIBE,
                                                ResourceType.TRANSACTIONAL_ID,
                                                {s.transactional_id for s in found})
            found = [s for s in found if s.transactional_id in visible]
        return ListTransactionsResponseData(unknown_state_filters=unknown,
                                            transaction_states=found)


def add_partitions_to_txn_error(body: AddPartitionsToTxnRequestData, version: int, code: int,
                                message: str | None = None) -> AddPartitionsToTxnResponseData:
    if version < 4:
        codes = {tp: code for tp in _wanted(body.v3_and_below_topics)}
        return AddPartitionsToTxnResponseData(results_by_topic_v3_and_below=_topic_results(codes))
    return AddPartitionsToTxnResponseData(error_code=code)


def add_offsets_to_txn_error(body: AddOffsetsToTxnRequestData, version: int, code: int,
                             message: str | None = None) -> AddOffsetsToTxnResponseData:
    return AddOffsetsToTxnResponseData(error_code=code)


def end_txn_error(body: EndTxnRequestData, version: int, code: int,
                  message: str | None = None) -> EndTxnResponseData:
    return EndTxnResponseData(error_code=code)


def txn_offset_commit_error(body: TxnOffsetCommitRequestData, version: int, code: int,
                            message: str | None = None) -> TxnOffsetCommitResponseData:
    return TxnOffsetCommitResponseData(topics=[
        TxnOffsets.TxnOffsetCommitResponseTopic(name=t.name, partitions=[
            TxnOffsets.TxnOffsetCommitResponsePartition(partition_index=p.partition_index,
                                                        error_code=code)
            for p in t.partitions])
        for t in body.topics])


def _merge_topics(response: TxnOffsetCommitResponseData,
                  codes: Mapping[TopicPartition, int]) -> TxnOffsetCommitResponseData:
    """`response` (a TxnOffsetCommit answer) with the partitions of `codes` added."""
    for (topic, partition), code in codes.items():
        entry = next((t for t in response.topics if t.name == topic), None)
        if entry is None:
            entry = TxnOffsets.TxnOffsetCommitResponseTopic(name=topic, partitions=[])
            response.topics.append(entry)
        entry.partitions.append(TxnOffsets.TxnOffsetCommitResponsePartition(
            partition_index=partition, error_code=int(code)))
    return response


def _txn_state_error(transactional_id: str, code: int) -> TxnState:
    return TxnState(error_code=int(code), transactional_id=transactional_id,
                    transaction_start_time_ms=-1, producer_id=-1, producer_epoch=-1)


def describe_transactions_error(body: DescribeTransactionsRequestData, version: int, code: int,
                                message: str | None = None) -> DescribeTransactionsResponseData:
    return DescribeTransactionsResponseData(transaction_states=[
        _txn_state_error(t, code) for t in body.transactional_ids])


def list_transactions_error(body: ListTransactionsRequestData, version: int, code: int,
                            message: str | None = None) -> ListTransactionsResponseData:
    return ListTransactionsResponseData(error_code=code)


TRANSACTION_ERRORS: dict[int, ErrorBody] = {
    ApiKey.ADD_PARTITIONS_TO_TXN: add_partitions_to_txn_error,
    ApiKey.ADD_OFFSETS_TO_TXN: add_offsets_to_txn_error,
    ApiKey.END_TXN: end_txn_error,
    ApiKey.TXN_OFFSET_COMMIT: txn_offset_commit_error,
    ApiKey.DESCRIBE_TRANSACTIONS: describe_transactions_error,
    ApiKey.LIST_TRANSACTIONS: list_transactions_error,
}
