"""The transactional APIs on the wire: AddPartitionsToTxn v0-5 (the client form of v0-3
and the batched broker form of v4+, with verify_only), AddOffsetsToTxn v0-4, EndTxn v0-4,
TxnOffsetCommit v0-4, DescribeTransactions v0 and ListTransactions v0-1.

Each checks what Kafka's KafkaApis checks: the client forms need WRITE on the transactional
id (TxnOffsetCommit and AddOffsetsToTxn also READ on the group, AddPartitionsToTxn WRITE on
each topic, TxnOffsetCommit READ on each topic), the broker form of AddPartitionsToTxn (v4+)
needs CLUSTER_ACTION, and the describing APIs show only what the principal may DESCRIBE.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterable, Mapping

from broker.apis.authorization import ALLOW_ALL, AclOperation, Authorization, ResourceType
from broker.apis.request import DecodedRequest, ErrorBody, RequestContext, RequestRouter
from broker.group.coordinator import GroupCoordinator
from broker.group.routing import CONSUMER_OFFSETS_TOPIC
from broker.txn.coordinator import TransactionCoordinator
from clients.protocol import ApiKey, ErrorCode
from metadata.describe import INTERNAL_TOPICS
from metadata.image import MetadataImage

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


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

    async def add_partitions_to_txn(self, request: DecodedRequest, ctx: RequestContext) -> dict:
        body, version = request.body, request.api_version
        if version < 4:
            transactional_id = body.get("v3_and_below_transactional_id") or ""
            wanted = _wanted(body.get("v3_and_below_topics"))
            refused = self._txn_id_refusal(ctx, AclOperation.WRITE, transactional_id)
            if refused:
                return add_partitions_to_txn_error(body, version, refused)
            codes = await self._add(transactional_id, int(body["v3_and_below_producer_id"]),
                                    int(body["v3_and_below_producer_epoch"]), wanted, False,
                                    self._writable(ctx, {t for t, _ in wanted}))
            codes = {tp: fenced_for_version(c, version) for tp, c in codes.items()}
            return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _topic_results(codes)}
        # The batched form comes from brokers verifying transactional produce (KIP-890).
        if not self._authz.cluster(ctx, AclOperation.CLUSTER_ACTION):
            return add_partitions_to_txn_error(body, version,
                                               ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
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
        group_id = body.get("group_id") or ""
        refused = (self._txn_id_refusal(ctx, AclOperation.WRITE,
                                        body.get("transactional_id") or "")
                   or self._authz.refusal(ctx, AclOperation.READ, ResourceType.GROUP, group_id))
        if refused:
            return {"throttle_time_ms": 0, "error_code": int(refused)}
        partition = self.groups.engine.partition_for(group_id)
        code = await self.transactions.add_partitions(
            body.get("transactional_id") or "", int(body["producer_id"]),
            int(body["producer_epoch"]), [(CONSUMER_OFFSETS_TOPIC, partition)])
        return {"throttle_time_ms": 0,
                "error_code": fenced_for_version(code, request.api_version)}

    async def end_txn(self, request: DecodedRequest, ctx: RequestContext) -> dict:
        body = request.body
        refused = self._txn_id_refusal(ctx, AclOperation.WRITE, body.get("transactional_id") or "")
        if refused:
            return {"throttle_time_ms": 0, "error_code": int(refused)}
        code = await self.transactions.end_transaction(
            body.get("transactional_id") or "", int(body["producer_id"]),
            int(body["producer_epoch"]), bool(body["committed"]))
        return {"throttle_time_ms": 0,
                "error_code": fenced_for_version(code, request.api_version)}

    async def txn_offset_commit(self, request: DecodedRequest, ctx: RequestContext) -> dict:
        body, version = request.body, request.api_version
        group_id = body.get("group_id") or ""
        refused = (self._txn_id_refusal(ctx, AclOperation.WRITE,
                                        body.get("transactional_id") or "")
                   or self._authz.refusal(ctx, AclOperation.READ, ResourceType.GROUP, group_id))
        if refused:
            return txn_offset_commit_error(body, version, refused)
        readable = self._topics_allowed(ctx, AclOperation.READ,
                                        (t["name"] for t in body.get("topics") or ()))
        allowed = [t for t in body.get("topics") or () if t["name"] in readable]
        denied = [t for t in body.get("topics") or () if t["name"] not in readable]
        codes: dict[TopicPartition, int] = {
            (t["name"], p["partition_index"]): ErrorCode.TOPIC_AUTHORIZATION_FAILED
            for t in denied for p in t.get("partitions") or ()}
        if allowed or not denied:
            allowed_body = {**body, "topics": allowed}
            code = txn_offset_commit_code(self.groups.coordinator_error(group_id), version)
            if code:
                return _merge_topics(txn_offset_commit_error(allowed_body, version, code), codes)
            codes.update((await self.groups.commit_txn_offsets(allowed_body,
                                                               self._topic_exists)).codes)
        topics: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), c in codes.items():
            topics.setdefault(topic, []).append(
                {"partition_index": partition, "error_code": txn_offset_commit_code(c, version)})
        return {"throttle_time_ms": 0,
                "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()]}

    def _topic_exists(self, topic: str) -> bool:
        return self._image().topic(topic) is not None

    async def describe_transactions(self, request: DecodedRequest, ctx: RequestContext) -> dict:
        ids = request.body.get("transactional_ids") or ()
        return {"throttle_time_ms": 0,
                "transaction_states": [self._describe(ctx, t) for t in ids]}

    def _describe(self, ctx: RequestContext, transactional_id: str) -> dict[str, Any]:
        refused = self._txn_id_refusal(ctx, AclOperation.DESCRIBE, transactional_id)
        if refused:
            return _txn_state_error(transactional_id, refused)
        state = self.transactions.describe(transactional_id)
        if self._authz.enabled and state.get("topics"):
            # As Kafka: partitions of topics the principal may not describe are left out.
            visible = self._topics_allowed(ctx, AclOperation.DESCRIBE,
                                           (t["topic"] for t in state["topics"]))
            state = {**state, "topics": [t for t in state["topics"] if t["topic"] in visible]}
        return state

    async def list_transactions(self, request: DecodedRequest, ctx: RequestContext) -> dict:
        body = request.body
        unknown, found = self.transactions.list_transactions(
            list(body.get("state_filters") or ()), list(body.get("producer_id_filters") or ()),
            int(body.get("duration_filter", -1)))
        if self._authz.enabled:
            visible = self._authz.allowed_names(ctx, AclOperation.DESCRIBE,
                                                ResourceType.TRANSACTIONAL_ID,
                                                {s["transactional_id"] for s in found})
            found = [s for s in found if s["transactional_id"] in visible]
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


def _merge_topics(response: dict, codes: Mapping[TopicPartition, int]) -> dict:
    """`response` (a TxnOffsetCommit answer) with the partitions of `codes` added."""
    for (topic, partition), code in codes.items():
        entry = next((t for t in response["topics"] if t["name"] == topic), None)
        if entry is None:
            entry = {"name": topic, "partitions": []}
            response["topics"].append(entry)
        entry["partitions"].append({"partition_index": partition, "error_code": int(code)})
    return response


def _txn_state_error(transactional_id: str, code: int) -> dict[str, Any]:
    return {"error_code": int(code), "transactional_id": transactional_id,
            "transaction_state": "", "transaction_timeout_ms": 0,
            "transaction_start_time_ms": -1, "producer_id": -1, "producer_epoch": -1,
            "topics": []}


def describe_transactions_error(body: Mapping[str, Any], version: int, code: int,
                                message: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "transaction_states": [
        _txn_state_error(t, code) for t in body.get("transactional_ids") or ()]}


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
