"""Admin operations on transactions, as I/O-free generators (see ``operations``): list and
describe transactions (at their coordinators), describe a partition's active producers
(at its leader), and abort a hanging transaction by writing its ABORT marker (at the
partition's leader, as Kafka's admin client does)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from clients.admin.operations import (
    Call,
    Operation,
    TopicPartition,
    _at_leaders,
    _fixed,
    _raise_for,
    metadata,
)
from clients.protocol import ApiKey, ErrorCode, KafkaError

TRANSACTION_COORDINATOR = 1


@dataclass(frozen=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str
    coordinator_id: int


@dataclass(frozen=True)
class TransactionDescription:
    transactional_id: str
    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_time_ms: int               # -1 when no transaction is open
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class ProducerState:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int    # -1 when the producer has no open transaction


@dataclass(frozen=True)
class AbortTransactionSpec:
    """Which transaction to abort on which partition (Kafka's AbortTransactionSpec)."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int


def list_transactions(state_filters: Iterable[str] = (), producer_id_filters: Iterable[int] = (),
                      duration_filter_ms: int = -1) -> Operation:
    """Every transaction every broker coordinates (ListTransactions on each broker)."""
    cluster = yield from metadata([])
    body = {"state_filters": list(state_filters),
            "producer_id_filters": list(producer_id_filters),
            "duration_filter": duration_filter_ms}
    found: list[TransactionListing] = []
    for node_id in sorted(cluster.brokers):
        response = yield Call(ApiKey.LIST_TRANSACTIONS, _fixed(body), node_id=node_id)
        _raise_for(response["error_code"], None, f"ListTransactions on broker {node_id}")
        found += [TransactionListing(t["transactional_id"], t["producer_id"],
                                     t["transaction_state"], node_id)
                  for t in response["transaction_states"]]
    return sorted(found, key=lambda t: t.transactional_id)


def find_transaction_coordinator(transactional_id: str) -> Operation:
    response = yield Call(ApiKey.FIND_COORDINATOR, lambda version: (
        {"key_type": TRANSACTION_COORDINATOR, "coordinator_keys": [transactional_id]}
        if version >= 4 else {"key": transactional_id, "key_type": TRANSACTION_COORDINATOR}))
    entry = response["coordinators"][0] if response.get("coordinators") else response
    _raise_for(entry["error_code"], entry.get("error_message"),
               f"finding the coordinator of transactional id {transactional_id!r}")
    return int(entry["node_id"])


def describe_transactions(transactional_ids: Iterable[str]) -> Operation:
    """{transactional id: TransactionDescription or KafkaError}, each from its coordinator."""
    out: dict[str, TransactionDescription | KafkaError] = {}
    for tid in transactional_ids:
        try:
            node_id = yield from find_transaction_coordinator(tid)
        except KafkaError as exc:
            out[tid] = exc
            continue
        response = yield Call(ApiKey.DESCRIBE_TRANSACTIONS,
                              _fixed({"transactional_ids": [tid]}), node_id=node_id)
        for t in response["transaction_states"]:
            if t["error_code"] != ErrorCode.NONE:
                code = ErrorCode.from_code(t["error_code"])
                out[t["transactional_id"]] = KafkaError(
                    code, f"transactional id {t['transactional_id']!r}: {code.message}")
                continue
            partitions = tuple(sorted((topic["topic"], p) for topic in t["topics"]
                                      for p in topic["partitions"]))
            out[t["transactional_id"]] = TransactionDescription(
                t["transactional_id"], node_id, t["transaction_state"], t["producer_id"],
                t["producer_epoch"], t["transaction_timeout_ms"],
                t["transaction_start_time_ms"], partitions)
    return out


def describe_producers(partitions: Iterable[TopicPartition],
                       broker_id: int | None = None) -> Operation:
    """{partition: [ProducerState] or KafkaError}, from each partition's leader, or from
    the replica on ``broker_id`` when given."""
    def body(topics: dict[str, list[tuple[int, Any]]]) -> dict[str, Any]:
        return {"topics": [{"name": name, "partition_indexes": [p for p, _ in ps]}
                           for name, ps in topics.items()]}

    def answers(response: dict[str, Any]) -> Iterable[tuple[TopicPartition, int, Any]]:
        for topic in response["topics"]:
            for p in topic["partitions"]:
                yield (topic["name"], p["partition_index"]), p["error_code"], p

    wanted = {tp: None for tp in partitions}
    if broker_id is None:
        found = yield from _at_leaders(wanted, ApiKey.DESCRIBE_PRODUCERS, body, answers)
    else:
        by_topic: dict[str, list[tuple[int, Any]]] = {}
        for topic, partition in sorted(wanted):
            by_topic.setdefault(topic, []).append((partition, None))
        response = yield Call(ApiKey.DESCRIBE_PRODUCERS, _fixed(body(by_topic)),
                              node_id=broker_id)
        found = {}
        for tp, code, entry in answers(response):
            error = ErrorCode.from_code(code)
            found[tp] = entry if code == ErrorCode.NONE else KafkaError(
                error, f"{tp[0]}-{tp[1]} on broker {broker_id}: {error.message}")
    return {tp: entry if isinstance(entry, KafkaError) else [
        ProducerState(s["producer_id"], s["producer_epoch"], s["last_sequence"],
                      s["last_timestamp"], s["coordinator_epoch"],
                      s["current_txn_start_offset"]) for s in entry["active_producers"]]
        for tp, entry in found.items()}


def abort_transaction(spec: AbortTransactionSpec) -> Operation:
    """WriteTxnMarkers with an ABORT marker for the producer's open transaction, sent to the
    partition's leader."""
    def body(topics: dict[str, list[tuple[int, Any]]]) -> dict[str, Any]:
        return {"markers": [{
            "producer_id": spec.producer_id, "producer_epoch": spec.producer_epoch,
            "transaction_result": False, "coordinator_epoch": spec.coordinator_epoch,
            "topics": [{"name": name, "partition_indexes": [p for p, _ in ps]}
                       for name, ps in topics.items()]}]}

    def answers(response: dict[str, Any]) -> Iterable[tuple[TopicPartition, int, Any]]:
        for marker in response["markers"]:
            for topic in marker["topics"]:
                for p in topic["partitions"]:
                    yield (topic["name"], p["partition_index"]), p["error_code"], p

    tp = (spec.topic, spec.partition)
    found = yield from _at_leaders({tp: None}, ApiKey.WRITE_TXN_MARKERS, body, answers)
    result = found[tp]
    if isinstance(result, KafkaError):
        raise result


def partitions_on_broker(broker_id: int) -> Operation:
    """Every partition with a replica on ``broker_id``."""
    cluster = yield from metadata(None)
    if broker_id not in cluster.brokers:
        raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE,
                         f"broker {broker_id} is not in the cluster's metadata")
    return sorted((name, p.partition) for name, topic in cluster.topics.items()
                  for p in topic.partitions.values() if broker_id in p.replicas)


def transactional_ids_of(producer_ids: Mapping[int, Any]) -> Operation:
    """{producer id: TransactionListing} of the coordinators' transactions for those ids."""
    listings = yield from list_transactions(producer_id_filters=sorted(producer_ids))
    return {t.producer_id: t for t in listings}
