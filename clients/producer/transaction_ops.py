"""The transactional producer's requests as I/O-free generators, run by the trio and the
blocking producer.

An operation yields steps: ``SendRequest`` (a request to a broker, or to any broker when
``node`` is None; the driver sends back the decoded answer, or throws the connection error
into the generator), ``Sleep`` (a retry backoff) and ``Flush`` (wait until every buffered
record is settled). Retriable errors are retried here, as Kafka's TransactionManager does; others
raise KafkaError after updating the TransactionManager.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generator, Mapping

from clients.common.cluster import BrokerNode
from clients.net import KafkaConnectionError
from clients.producer.transactions import (
    COORDINATOR_ERRORS,
    RETRY_ERRORS,
    ConsumerGroupMetadata,
    TopicPartition,
    TransactionManager,
)
from clients.protocol import ApiKey, ErrorCode, KafkaError

TRANSACTION_COORDINATOR = 1
GROUP_COORDINATOR = 0
# FindCoordinator's single-key form; AddPartitionsToTxn v4+ is the brokers' batched form.
FIND_COORDINATOR_VERSION = 3
ADD_PARTITIONS_CLIENT_VERSION = 3


@dataclass(frozen=True)
class SendRequest:
    api_key: ApiKey
    body: dict[str, Any]
    node: BrokerNode | None = None
    version: int | None = None       # the highest version to use


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Flush:
    """Wait until every record is settled; ``abort`` first fails those not yet sent."""

    abort: bool = False


Step = SendRequest | Sleep | Flush
Operation = Generator[Step, Any, Any]


def _error(code: int, context: str, message: str | None = None) -> KafkaError:
    code = ErrorCode.from_code(code)
    return KafkaError(code, f"{context}: {message or code.message}")


def find_coordinator(key_type: int, key: str, backoff_s: float) -> Operation:
    """The broker coordinating ``key`` (a transactional id or a group)."""
    while True:
        try:
            response = yield SendRequest(ApiKey.FIND_COORDINATOR,
                                         {"key": key, "key_type": key_type},
                                         None, FIND_COORDINATOR_VERSION)
        except KafkaConnectionError:
            yield Sleep(backoff_s)
            continue
        code = ErrorCode.from_code(response["error_code"])
        if code == ErrorCode.NONE:
            return BrokerNode(response["node_id"], response["host"], response["port"])
        if code.retriable:
            yield Sleep(backoff_s)
            continue
        raise _error(code, f"finding the coordinator of {key!r}", response.get("error_message"))


def _to_coordinator(tm: TransactionManager, api_key: ApiKey, body: dict[str, Any],
                    backoff_s: float, version: int | None = None) -> Operation:
    """Send to the transaction coordinator, finding it first; a connection error looks it
    up again. Returns the answer."""
    while True:
        if tm.coordinator is None:
            tm.coordinator = yield from find_coordinator(TRANSACTION_COORDINATOR,
                                                         tm.transactional_id, backoff_s)
        try:
            return (yield SendRequest(api_key, body, tm.coordinator, version))
        except KafkaConnectionError:
            tm.coordinator = None
            yield Sleep(backoff_s)


def _retry_top_level(tm: TransactionManager, api_key: ApiKey,
                     body: Callable[[], dict[str, Any]], context: str,
                     backoff_s: float) -> Operation:
    """A coordinator request with one top-level error code, retried as Kafka retries it."""
    while True:
        response = yield from _to_coordinator(tm, api_key, body(), backoff_s)
        code = ErrorCode.from_code(response["error_code"])
        if code == ErrorCode.NONE:
            return response
        if code in COORDINATOR_ERRORS:
            tm.coordinator = None
        elif code not in RETRY_ERRORS:
            raise tm.fail(_error(code, context))
        yield Sleep(backoff_s)


def init_transactions(tm: TransactionManager, backoff_s: float) -> Operation:
    """InitProducerId with the transactional id: a producer id and epoch, fencing any older
    producer of the id and aborting its open transaction. With ``epoch_bump_needed`` it
    names the current id and epoch (KIP-360)."""
    identity = tm.idempotence.identity
    bump = tm.epoch_bump_needed and identity.valid

    def body() -> dict[str, Any]:
        return {"transactional_id": tm.transactional_id,
                "transaction_timeout_ms": tm.timeout_ms,
                "producer_id": identity.producer_id if bump else -1,
                "producer_epoch": identity.epoch if bump else -1}

    response = yield from _retry_top_level(tm, ApiKey.INIT_PRODUCER_ID, body,
                                           "InitProducerId", backoff_s)
    tm.initialized(response["producer_id"], response["producer_epoch"])


def _topics(partitions: set[TopicPartition]) -> list[dict[str, Any]]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return [{"name": t, "partitions": ps} for t, ps in by_topic.items()]


def add_partitions(tm: TransactionManager, backoff_s: float) -> Operation:
    """AddPartitionsToTxn for the partitions records were sent to since the last one."""
    while tm.pending and not tm.in_error:
        wanted = set(tm.pending)
        identity = tm.idempotence.identity
        body = {"v3_and_below_transactional_id": tm.transactional_id,
                "v3_and_below_producer_id": identity.producer_id,
                "v3_and_below_producer_epoch": identity.epoch,
                "v3_and_below_topics": _topics(wanted)}
        response = yield from _to_coordinator(tm, ApiKey.ADD_PARTITIONS_TO_TXN, body,
                                              backoff_s, ADD_PARTITIONS_CLIENT_VERSION)
        codes = {(t["name"], r["partition_index"]): ErrorCode.from_code(r["partition_error_code"])
                 for t in response["results_by_topic_v3_and_below"]
                 for r in t["results_by_partition"]}
        added = {tp for tp, code in codes.items() if code == ErrorCode.NONE}
        tm.added(added & wanted)
        failed = {tp: code for tp, code in codes.items() if code != ErrorCode.NONE}
        if not failed:
            continue
        if any(code in COORDINATOR_ERRORS for code in failed.values()):
            tm.coordinator = None
        hard = {tp: code for tp, code in failed.items()
                if code not in RETRY_ERRORS and code not in COORDINATOR_ERRORS
                and code != ErrorCode.OPERATION_NOT_ATTEMPTED}
        if hard:
            (topic, partition), code = sorted(hard.items())[0]
            raise tm.fail(_error(code, f"adding {topic}-{partition} to the transaction"))
        # Kafka retries CONCURRENT_TRANSACTIONS here after a short backoff: the previous
        # transaction is still being completed.
        yield Sleep(min(backoff_s, 0.02)
                    if ErrorCode.CONCURRENT_TRANSACTIONS in failed.values() else backoff_s)


def send_offsets(tm: TransactionManager, offsets: Mapping[TopicPartition, int],
                 group: ConsumerGroupMetadata, backoff_s: float) -> Operation:
    """AddOffsetsToTxn to the transaction coordinator, then TxnOffsetCommit to the group
    coordinator: the offsets are committed with the transaction."""
    identity = tm.idempotence.identity

    def add_body() -> dict[str, Any]:
        return {"transactional_id": tm.transactional_id, "producer_id": identity.producer_id,
                "producer_epoch": identity.epoch, "group_id": group.group_id}

    yield from _retry_top_level(tm, ApiKey.ADD_OFFSETS_TO_TXN, add_body,
                                f"adding group {group.group_id!r} to the transaction", backoff_s)
    tm.offsets_added = True
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        by_topic.setdefault(topic, []).append({
            "partition_index": partition, "committed_offset": offset,
            "committed_leader_epoch": -1, "committed_metadata": ""})
    body = {"transactional_id": tm.transactional_id, "group_id": group.group_id,
            "producer_id": identity.producer_id, "producer_epoch": identity.epoch,
            "generation_id": group.generation_id, "member_id": group.member_id,
            "group_instance_id": group.group_instance_id,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
    coordinator: BrokerNode | None = None
    while body["topics"]:
        if coordinator is None:
            coordinator = yield from find_coordinator(GROUP_COORDINATOR, group.group_id,
                                                      backoff_s)
        try:
            response = yield SendRequest(ApiKey.TXN_OFFSET_COMMIT, body, coordinator)
        except KafkaConnectionError:
            coordinator = None
            yield Sleep(backoff_s)
            continue
        retry: dict[str, set[int]] = {}
        for topic in response["topics"]:
            for p in topic["partitions"]:
                code = ErrorCode.from_code(p["error_code"])
                if code == ErrorCode.NONE:
                    continue
                if code in COORDINATOR_ERRORS:
                    coordinator = None
                elif code not in RETRY_ERRORS:
                    raise tm.fail(_error(code, f"committing the offset of "
                                               f"{topic['name']}-{p['partition_index']} "
                                               f"for group {group.group_id!r}"))
                retry.setdefault(topic["name"], set()).add(p["partition_index"])
        body = {**body, "topics": [{"name": t["name"], "partitions": [
            p for p in t["partitions"] if p["partition_index"] in retry.get(t["name"], ())]}
            for t in body["topics"] if t["name"] in retry]}
        if body["topics"]:
            yield Sleep(backoff_s)


def end_transaction(tm: TransactionManager, commit: bool, backoff_s: float) -> Operation:
    """Flush, then EndTxn (commit or abort); an abort after a sequence error is followed by
    InitProducerId bumping the epoch (KIP-360)."""
    yield Flush(abort=not commit)
    if commit and tm.in_error:
        assert tm.error is not None
        raise tm.error
    if tm.partitions or tm.offsets_added:
        identity = tm.idempotence.identity

        def body() -> dict[str, Any]:
            return {"transactional_id": tm.transactional_id,
                    "producer_id": identity.producer_id, "producer_epoch": identity.epoch,
                    "committed": commit}

        yield from _retry_top_level(tm, ApiKey.END_TXN, body,
                                    "committing the transaction" if commit
                                    else "aborting the transaction", backoff_s)
    bump = tm.epoch_bump_needed
    tm.completed()
    if bump and not commit:
        yield from init_transactions(tm, backoff_s)
