"""Cluster operations as admin operations: leader elections and log directory descriptions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from clients.admin.operations import (
    DEFAULT_TIMEOUT_MS,
    Call,
    Operation,
    TopicPartition,
    _fixed,
    _raise_for,
    metadata,
)
from clients.protocol import ApiKey, ErrorCode

PREFERRED = 0
UNCLEAN = 1
ELECTION_TYPES = {"PREFERRED": PREFERRED, "UNCLEAN": UNCLEAN}


@dataclass(frozen=True)
class ElectionResult:
    """One partition's outcome: NONE, or Kafka's error (ELECTION_NOT_NEEDED, ...)."""

    topic: str
    partition: int
    error: ErrorCode
    message: str | None


def elect_leaders(election_type: int, partitions: Iterable[TopicPartition] | None,
                  timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Operation:
    """ElectLeaders for `partitions` (None: every partition); the per-partition results."""
    named = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        named = [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]
    body = {"election_type": election_type, "topic_partitions": named,
            "timeout_ms": timeout_ms}
    # Any broker forwards it to the active controller, which may have just moved.
    response = yield Call(ApiKey.ELECT_LEADERS, _fixed(body))
    code = int(response.get("error_code", 0))
    if code:
        _raise_for(code, None, "leader election")
    return [ElectionResult(r["topic"], p["partition_id"], ErrorCode.from_code(p["error_code"]),
                           p.get("error_message"))
            for r in response["replica_election_results"] for p in r["partition_result"]]


@dataclass(frozen=True)
class ReplicaLogDir:
    """One replica's log in a log directory."""

    topic: str
    partition: int
    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True)
class LogDirDescription:
    path: str
    error: ErrorCode
    replicas: list[ReplicaLogDir]
    total_bytes: int = -1
    usable_bytes: int = -1


def describe_log_dirs(broker_id: int, topics: Iterable[str] | None = None) -> Operation:
    """The log directories of broker `broker_id` and the replicas in each (of `topics`, or
    every topic)."""
    body = {"topics": None if topics is None else [
        {"topic": t, "partitions": []} for t in topics]}
    if topics is not None:
        # DescribeLogDirs names partitions; the replicas of whole topics come from Metadata.
        cluster = yield from metadata(list(topics))
        body["topics"] = [{"topic": t, "partitions": sorted(info.partitions)}
                          for t, info in cluster.topics.items() if info.error_code == 0]
    response = yield Call(ApiKey.DESCRIBE_LOG_DIRS, _fixed(body), node_id=broker_id)
    code = int(response.get("error_code", 0))
    if code:
        _raise_for(code, None, f"broker {broker_id}")
    return [LogDirDescription(
        result["log_dir"], ErrorCode.from_code(result["error_code"]),
        [ReplicaLogDir(t["name"], p["partition_index"], p["partition_size"], p["offset_lag"],
                       p["is_future_key"])
         for t in result["topics"] for p in t["partitions"]],
        result.get("total_bytes", -1), result.get("usable_bytes", -1))
        for result in response["results"]]


def unregister_broker(broker_id: int) -> Operation:
    """UnregisterBroker: remove a broker that is gone for good from the cluster's metadata."""
    response = yield Call(ApiKey.UNREGISTER_BROKER, _fixed({"broker_id": broker_id}))
    _raise_for(response["error_code"], response.get("error_message"), f"broker {broker_id}")
    return None
