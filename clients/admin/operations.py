"""Admin operations as I/O-free generators, run by the trio and the blocking admin client.

Each operation yields ``Call``s (which API, to which broker, the body for the negotiated
version) and receives the decoded response; its return value is the operation's result.
Broker-reported errors raise ``KafkaError`` with Kafka's code and message.
"""

from __future__ import annotations

import operator
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Iterable, Mapping

from clients.common.cluster import BrokerNode, ClusterMetadata, PartitionInfo, metadata_request
from clients.protocol import ApiKey, ErrorCode, KafkaError

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
SET_OPERATION = 0
DELETE_OPERATION = 1
DEFAULT_TIMEOUT_MS = 60000

CONFIG_SOURCES = {
    -1: "UNKNOWN", 0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG", 7: "CLIENT_METRICS_CONFIG", 8: "GROUP_CONFIG",
}


@dataclass(frozen=True)
class Call:
    """One request: ``build(version)`` gives the body for the version the connection picks.
    ``node_id`` sends it to that broker; ``to_controller`` to the controller Metadata names;
    otherwise it goes to any broker."""

    api_key: ApiKey
    build: Callable[[int], dict[str, Any]]
    to_controller: bool = False
    node_id: int | None = None  # a partition's leader or a group's coordinator


Operation = Generator[Call, dict[str, Any], Any]
TopicPartition = tuple[str, int]

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
# Partition errors after which the leader is looked up again and the partition retried.
_LEADER_MOVED = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
                           ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH})
LEADER_LOOKUPS = 3


_INT16 = (-(2**15), 2**15 - 1)
_INT32 = (-(2**31), 2**31 - 1)


def _check_wire_int(value: Any, bounds: tuple[int, int], what: str) -> None:
    """Refuse, before anything is sent, a number the request's field cannot carry."""
    try:
        number = operator.index(value)
    except TypeError:
        number = None
    if number is None or isinstance(value, bool):
        raise ValueError(f"{what} must be an integer, not {value!r}")
    low, high = bounds
    if not low <= number <= high:
        raise ValueError(f"{what} must be between {low} and {high}, not {value}")


@dataclass(frozen=True)
class NewTopic:
    """A topic to create; -1 takes the broker's num.partitions / default.replication.factor.
    Raises ValueError for a count the protocol cannot carry (partitions are an int32, the
    replication factor an int16)."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    configs: Mapping[str, str | None] = field(default_factory=dict)
    replica_assignments: Mapping[int, list[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_wire_int(self.num_partitions, _INT32, f"num_partitions of topic {self.name!r}")
        _check_wire_int(self.replication_factor, _INT16,
                        f"replication_factor of topic {self.name!r}")
        for partition, broker_ids in self.replica_assignments.items():
            _check_wire_int(partition, _INT32, f"a partition id of topic {self.name!r}")
            for broker_id in broker_ids:
                _check_wire_int(broker_id, _INT32, f"a broker id of topic {self.name!r}")


@dataclass(frozen=True)
class TopicDescription:
    name: str
    topic_id: uuid.UUID
    is_internal: bool
    partitions: list[PartitionInfo]


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: str
    read_only: bool
    is_sensitive: bool

    @property
    def is_default(self) -> bool:
        return self.source == "DEFAULT_CONFIG"


@dataclass(frozen=True)
class ListedOffset:
    """A ListOffsets answer: the offset, and the record's timestamp and leader epoch (-1
    when the lookup was not by time)."""

    offset: int
    timestamp: int
    leader_epoch: int


@dataclass(frozen=True)
class ClusterDescription:
    cluster_id: str
    controller_id: int
    brokers: list[BrokerNode]


def _raise_for(code: int, message: str | None, subject: str) -> None:
    if code != ErrorCode.NONE:
        error = ErrorCode.from_code(code)
        raise KafkaError(error, message or f"{subject}: {error.message}")


def _fixed(body: dict[str, Any]) -> Callable[[int], dict[str, Any]]:
    return lambda version: body


def metadata(topics: Iterable[str] | None) -> Operation:
    """A Metadata snapshot for ``topics`` (None: all; empty: brokers only)."""
    body = metadata_request(None if topics is None else list(topics))
    response = yield Call(ApiKey.METADATA, _fixed(body))
    return ClusterMetadata.from_response(response)


def create_topics(topics: Iterable[NewTopic], validate_only: bool = False,
                  timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Operation:
    """Create topics; returns {name: topic id} (the zero uuid for validate_only)."""
    wanted = list(topics)
    body = {
        "topics": [{
            "name": t.name, "num_partitions": t.num_partitions,
            "replication_factor": t.replication_factor,
            "assignments": [{"partition_index": p, "broker_ids": list(ids)}
                            for p, ids in sorted(t.replica_assignments.items())],
            "configs": [{"name": k, "value": v} for k, v in t.configs.items()],
        } for t in wanted],
        "timeout_ms": timeout_ms,
        "validate_only": validate_only,
    }
    response = yield Call(ApiKey.CREATE_TOPICS, _fixed(body), to_controller=True)
    results: dict[str, uuid.UUID] = {}
    for result in response["topics"]:
        _raise_for(result["error_code"], result.get("error_message"),
                   f"topic {result['name']!r}")
        results[result["name"]] = result.get("topic_id") or uuid.UUID(int=0)
    return results


def delete_topics(names: Iterable[str], timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Operation:
    wanted = list(names)

    def build(version: int) -> dict[str, Any]:
        if version >= 6:
            return {"topics": [{"name": n, "topic_id": uuid.UUID(int=0)} for n in wanted],
                    "timeout_ms": timeout_ms}
        return {"topic_names": wanted, "timeout_ms": timeout_ms}

    response = yield Call(ApiKey.DELETE_TOPICS, build, to_controller=True)
    for result in response["responses"]:
        _raise_for(result["error_code"], result.get("error_message"),
                   f"topic {result.get('name')!r}")
    return None


def list_topics(include_internal: bool = False) -> Operation:
    cluster = yield from metadata(None)
    return sorted(name for name, info in cluster.topics.items()
                  if info.error_code == ErrorCode.NONE
                  and (include_internal or not info.is_internal))


def describe_topics(names: Iterable[str] | None = None,
                    include_internal: bool = True) -> Operation:
    """Descriptions of ``names`` (every topic when None), in the order asked (else by name).
    An unknown topic raises KafkaError(UNKNOWN_TOPIC_OR_PARTITION)."""
    wanted = None if names is None else list(names)
    cluster = yield from metadata(wanted)
    order = wanted if wanted is not None else sorted(cluster.topics)
    out: list[TopicDescription] = []
    for name in order:
        info = cluster.topics.get(name)
        if info is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             f"Topic '{name}' does not exist")
        if info.error_code != ErrorCode.NONE:
            code = ErrorCode.from_code(info.error_code)
            message = (f"Topic '{name}' does not exist"
                       if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                       else f"topic {name!r}: {code.message}")
            raise KafkaError(code, message)
        if info.is_internal and not include_internal and wanted is None:
            continue
        partitions = [info.partitions[p] for p in sorted(info.partitions)]
        out.append(TopicDescription(name, info.topic_id, info.is_internal, partitions))
    return out


def create_partitions(new_totals: Mapping[str, int], validate_only: bool = False,
                      timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Operation:
    """Raise each topic's partition count to its new total (ValueError, before anything is
    sent, for a total the protocol's int32 cannot carry)."""
    for topic, total in new_totals.items():
        _check_wire_int(total, _INT32, f"the new partition count of topic {topic!r}")
    body = {"topics": [{"name": t, "count": n, "assignments": None}
                       for t, n in new_totals.items()],
            "timeout_ms": timeout_ms, "validate_only": validate_only}
    response = yield Call(ApiKey.CREATE_PARTITIONS, _fixed(body), to_controller=True)
    for result in response["results"]:
        _raise_for(result["error_code"], result.get("error_message"),
                   f"topic {result['name']!r}")
    return None


def describe_configs(resource_name: str, resource_type: int = TOPIC_RESOURCE,
                     keys: Iterable[str] | None = None) -> Operation:
    """{name: ConfigEntry} of a topic (or, with BROKER_RESOURCE, a broker id)."""
    body = {"resources": [{"resource_type": resource_type, "resource_name": resource_name,
                           "configuration_keys": None if keys is None else list(keys)}],
            "include_synonyms": False, "include_documentation": False}
    response = yield Call(ApiKey.DESCRIBE_CONFIGS, _fixed(body))
    entries: dict[str, ConfigEntry] = {}
    for result in response["results"]:
        _raise_for(result["error_code"], result.get("error_message"),
                   f"resource {resource_name!r}")
        for c in result["configs"]:
            entries[c["name"]] = ConfigEntry(
                c["name"], c["value"], CONFIG_SOURCES.get(c.get("config_source", -1), "UNKNOWN"),
                c["read_only"], c["is_sensitive"])
    return entries


def incremental_alter_configs(resource_name: str, changes: Mapping[str, str | None],
                              resource_type: int = TOPIC_RESOURCE,
                              validate_only: bool = False,
                              subject: str | None = None) -> Operation:
    """Set each key to its value, or delete it (back to the default) for None; `subject`
    names the resource in errors."""
    body = {"resources": [{
        "resource_type": resource_type, "resource_name": resource_name,
        "configs": [{"name": k, "value": v,
                     "config_operation": DELETE_OPERATION if v is None else SET_OPERATION}
                    for k, v in changes.items()],
    }], "validate_only": validate_only}
    response = yield Call(ApiKey.INCREMENTAL_ALTER_CONFIGS, _fixed(body), to_controller=True)
    for result in response["responses"]:
        _raise_for(result["error_code"], result.get("error_message"),
                   subject or f"resource {resource_name!r}")
    return None


def describe_cluster() -> Operation:
    body = {"include_cluster_authorized_operations": False}
    response = yield Call(ApiKey.DESCRIBE_CLUSTER, _fixed(body))
    _raise_for(response["error_code"], response.get("error_message"), "DescribeCluster")
    brokers = [BrokerNode(b["broker_id"], b["host"], b["port"], b.get("rack"))
               for b in response["brokers"]]
    return ClusterDescription(response["cluster_id"], response["controller_id"],
                              sorted(brokers, key=lambda b: b.node_id))


# ---- calls to partition leaders ----

def _locate(cluster: ClusterMetadata, tp: TopicPartition) -> int | KafkaError:
    """The partition's leader id, or the error that keeps it from being asked."""
    topic, partition = tp
    code = cluster.topic_error(topic)
    if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        return KafkaError(code, f"Topic '{topic}' does not exist")
    if code is not None:
        return KafkaError(code, f"topic {topic!r}: {code.message}")
    if cluster.partition(topic, partition) is None:
        return KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                          f"Partition {topic}-{partition} does not exist")
    leader = cluster.leader_for(topic, partition)
    if leader is None:
        return KafkaError(ErrorCode.LEADER_NOT_AVAILABLE,
                          f"{topic}-{partition}: {ErrorCode.LEADER_NOT_AVAILABLE.message}")
    return leader.node_id


def _at_leaders(wanted: Mapping[TopicPartition, Any], api_key: ApiKey,
                body: Callable[[dict[str, list[tuple[int, Any]]]], dict[str, Any]],
                answers: Callable[[dict[str, Any]], Iterable[tuple[TopicPartition, int,
                                                                  dict[str, Any]]]]
                ) -> Operation:
    """Send each partition's argument to its leader, one request per leader, as Kafka's
    admin client does; {partition: answer entry or KafkaError}. A partition whose leader
    moved is looked up again, up to LEADER_LOOKUPS times."""
    results: dict[TopicPartition, Any] = {}
    pending = dict(wanted)
    for lookup in range(LEADER_LOOKUPS):
        last = lookup == LEADER_LOOKUPS - 1
        cluster = yield from metadata(sorted({topic for topic, _ in pending}))
        by_leader: dict[int, dict[str, list[tuple[int, Any]]]] = {}
        retry: dict[TopicPartition, Any] = {}
        for tp, argument in pending.items():
            located = _locate(cluster, tp)
            if isinstance(located, KafkaError):
                if located.code in _LEADER_MOVED and not last:
                    retry[tp] = argument
                else:
                    results[tp] = located
                continue
            by_leader.setdefault(located, {}).setdefault(tp[0], []).append((tp[1], argument))
        for leader, topics in sorted(by_leader.items()):
            response = yield Call(api_key, _fixed(body(topics)), node_id=leader)
            for tp, code, entry in answers(response):
                if tp not in pending:
                    continue
                if code == ErrorCode.NONE:
                    results[tp] = entry
                elif code in _LEADER_MOVED and not last:
                    retry[tp] = pending[tp]
                else:
                    error = ErrorCode.from_code(code)
                    results[tp] = KafkaError(error, f"{tp[0]}-{tp[1]}: {error.message}")
        for tp in pending:
            if tp not in results and tp not in retry:
                results[tp] = KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR,
                                         f"{tp[0]}-{tp[1]}: the leader did not answer for it")
        if not retry:
            break
        pending = retry
    return results


def _partition_answers(response: dict[str, Any]
                       ) -> Iterable[tuple[TopicPartition, int, dict[str, Any]]]:
    for topic in response["topics"]:
        for p in topic["partitions"]:
            yield (topic["name"], p["partition_index"]), p["error_code"], p


def list_offsets(timestamps: Mapping[TopicPartition, int], isolation_level: int = 0
                 ) -> Operation:
    """ListOffsets at each partition's leader: -1 latest (the high watermark), -2 earliest,
    -3 the record with the largest timestamp, else the first record at or after that time.
    {partition: ListedOffset, or None when no record matches, or KafkaError}."""
    def body(topics: dict[str, list[tuple[int, Any]]]) -> dict[str, Any]:
        return {"replica_id": -1, "isolation_level": isolation_level, "topics": [
            {"name": name, "partitions": [
                {"partition_index": p, "current_leader_epoch": -1, "timestamp": ts}
                for p, ts in partitions]} for name, partitions in topics.items()]}

    found = yield from _at_leaders(timestamps, ApiKey.LIST_OFFSETS, body, _partition_answers)
    return {tp: entry if isinstance(entry, KafkaError)
            else None if entry["offset"] < 0
            else ListedOffset(entry["offset"], entry["timestamp"], entry.get("leader_epoch", -1))
            for tp, entry in found.items()}


def delete_records(before: Mapping[TopicPartition, int],
                   timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Operation:
    """DeleteRecords at each partition's leader: move its log start offset up to the given
    offset (-1: the high watermark). {partition: new low watermark, or KafkaError}."""
    def body(topics: dict[str, list[tuple[int, Any]]]) -> dict[str, Any]:
        return {"timeout_ms": timeout_ms, "topics": [
            {"name": name, "partitions": [{"partition_index": p, "offset": offset}
                                          for p, offset in partitions]}
            for name, partitions in topics.items()]}

    found = yield from _at_leaders(before, ApiKey.DELETE_RECORDS, body, _partition_answers)
    return {tp: entry if isinstance(entry, KafkaError) else entry["low_watermark"]
            for tp, entry in found.items()}
