"""The transactional APIs on the wire: AddPartitionsToTxn v0-5 (the client form of v0-3
and the batched broker form of v4+, with verify_only), AddOffsetsToTxn v0-4, EndTxn v0-4,
TxnOffsetCommit v0-4, DescribeTransactions v0 and ListTransactions v0-1.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Mapping

from broker.apis.request import DecodedRequest, ErrorBody, RequestContext, RequestRouter
from broker.group.coordinator import GroupCoordinator
from broker.group.routing import CONSUMER_OFFSETS_TOPIC
from broker.transaction.coordinator import TransactionCoordinator
from clients.protocol import ApiKey, ErrorCode
from metadata.image import MetadataImage

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


def fenced_for_version(code: int, version: int, first_with_fenced: int = 2) -> int:
    """PRODUCER_FENCED for clients that know it; INVALID_PRODUCER_EPOCH, which meant the
    same, for older request versions (as Kafka's request layer answers)."""
    if code == ErrorCode.PRODUCER_FENCED and version < first_with_fenced:
        return int(ErrorCode.INVALID_PRODUCER_EPOCH)
    return int(code)


def _wanted(topics: list[dict[str, Any]] | None) -> list[TopicPartition]:
    return [(t["name"], p) for t in topics or () for p in t.get("partitions") or ()]


def _topic_results(codes: Mapping[TopicPartition, int]) -> list[dict[str, Any]]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), code in codes.items():
        by_topic.setdefault(topic, []).append({"partition_index": partition,
                                               "partition_error_code": int(code)})
    return [{"name": t, "results_by_partition": ps} for t, ps in by_topic.items()]


class TransactionHandlers:
    """Registers the transactional APIs, answering from the transaction coordinator (and
    the group coordinator for TxnOffsetCommit)."""

    def __init__(self, transactions: TransactionCoordinator, groups: GroupCoordinator,
                 image: Callable[[], MetadataImage]) -> None:
        self.transactions = transactions
        self.groups = groups
        self._image = image

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
                   wanted: list[TopicPartition], verify_only: bool
                   ) -> dict[TopicPartition, int]:
        """Per-partition codes of one transaction's AddPartitionsToTxn entry."""
        if verify_only:
            return self.transactions.verify_partitions(transactional_id, producer_id, epoch,
                                                       wanted)
        image = self._image()
        unknown = {tp for tp in wanted if (topic := image.topic(tp[0])) is None
                   or tp[1] not in topic.partitions}
        if unknown:
            # Kafka adds none of them: the unknown ones say why, the others were not tried.
            return {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown
                    else ErrorCode.OPERATION_NOT_ATTEMPTED for tp in wanted}
        code = await self.transactions.add_partitions(transactional_id, producer_id, epoch,
                                                      wanted)
        return {tp: code for tp in wanted}

    async def add_partitions_to_txn(self, request: DecodedRequest, ctx: RequestContext) -> dict:
        body, version = request.body, request.api_version
        if version < 4:
            codes = await self._add(body.get("v3_and_below_transactional_id") or "",
                                    int(body["v3_and_below_producer_id"]),
                                    int(body["v3_and_below_producer_epoch"]),
                                    _wanted(body.get("v3_and_below_topics")), False)
            codes = {tp: fenced_for_version(c, version) for tp, c in codes.items()}
            return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _topic_results(codes)}
        results = []
        for txn in body.get("transactions") or ():
            codes = await self._add(txn["transactional_id"], int(txn["producer_id"]),
                                    int(txn["producer_epoch"]), _wanted(txn.get("topics")),
                                    bool(txn.get("verify_only", False)))
            results.append({"transactional_id": txn["transactional_id"],
                            "topic_results": _topic_results(codes)})
        return {"throttle_time_ms": 0, "error_code": 0, "results_by_transaction": results}

    async def add_offsets_to_txn(self, request: DecodedRequest, ctx: RequestContext) -> dict:
        body = request.body
        partition = self.groups.engine.partition_for(body.get("group_id") or "")
        code = await self.transactions.add_partitions(
            body.get("transactional_id") or "", int(body["producer_id"]),
            int(body["producer_epoch"]), [(CONSUMER_OFFSETS_TOPIC, partition)])
        return {"throttle_time_ms": 0,
                "error_code": fenced_for_version(code, request.api_version)}

    async def end_txn(self, request: DecodedRequest, ctx: RequestContext) -> dict:
        body = request.body
        code = await self.transactions.end_transaction(
            body.get("transactional_id") or "", int(body["producer_id"]),
            int(body["producer_epoch"]), bool(body["committed"]))
        return {"throttle_time_ms": 0,
                "error_code": fenced_for_version(code, request.api_version)}

    async def txn_offset_commit(self, request: DecodedRequest, ctx: RequestContext) -> dict:
        body = request.body
        code = self.groups.coordinator_error(body.get("group_id") or "")
        if code:
            return txn_offset_commit_error(body, request.api_version, code)
        codes = (await self.groups.commit_txn_offsets(body, self._topic_exists)).codes
        topics: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), c in codes.items():
            topics.setdefault(topic, []).append({"partition_index": partition,
                                                 "error_code": int(c)})
        return {"throttle_time_ms": 0,
                "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()]}

    def _topic_exists(self, topic: str) -> bool:
        return self._image().topic(topic) is not None

    async def describe_transactions(self, request: DecodedRequest, ctx: RequestContext) -> dict:
        ids = request.body.get("transactional_ids") or ()
        return {"throttle_time_ms": 0,
                "transaction_states": [self.transactions.describe(t) for t in ids]}

    async def list_transactions(self, request: DecodedRequest, ctx: RequestContext) -> dict:
        body = request.body
        unknown, found = self.transactions.list_transactions(
            list(body.get("state_filters") or ()), list(body.get("producer_id_filters") or ()),
            int(body.get("duration_filter", -1)))
        return {"throttle_time_ms": 0, "error_code": 0, "unknown_state_filters": unknown,
                "transaction_states": found}


def add_partitions_to_txn_error(body: Mapping[str, Any], version: int, code: int,
                                message: str | None = None) -> dict:
    if version < 4:
        codes = {tp: code for tp in _wanted(body.get("v3_and_below_topics"))}
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _topic_results(codes)}
    return {"throttle_time_ms": 0, "error_code": code, "results_by_transaction": []}


def top_level_error(body: Mapping[str, Any], version: int, code: int,
                    message: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "error_code": code}


def txn_offset_commit_error(body: Mapping[str, Any], version: int, code: int,
                            message: str | None = None) -> dict:
    topics = [{"name": t["name"], "partitions": [
        {"partition_index": p["partition_index"], "error_code": code}
        for p in t.get("partitions") or ()]} for t in body.get("topics") or ()]
    return {"throttle_time_ms": 0, "topics": topics}


def describe_transactions_error(body: Mapping[str, Any], version: int, code: int,
                                message: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "transaction_states": [
        {"error_code": code, "transactional_id": t, "transaction_state": "",
         "transaction_timeout_ms": 0, "transaction_start_time_ms": -1, "producer_id": -1,
         "producer_epoch": -1, "topics": []} for t in body.get("transactional_ids") or ()]}


def list_transactions_error(body: Mapping[str, Any], version: int, code: int,
                            message: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "unknown_state_filters": [],
            "transaction_states": []}


TRANSACTION_ERRORS: dict[int, ErrorBody] = {
    ApiKey.ADD_PARTITIONS_TO_TXN: add_partitions_to_txn_error,
    ApiKey.ADD_OFFSETS_TO_TXN: top_level_error,
    ApiKey.END_TXN: top_level_error,
    ApiKey.TXN_OFFSET_COMMIT: txn_offset_commit_error,
    ApiKey.DESCRIBE_TRANSACTIONS: describe_transactions_error,
    ApiKey.LIST_TRANSACTIONS: list_transactions_error,
}
