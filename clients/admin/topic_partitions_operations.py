"""DescribeTopicPartitions (KIP-966): topic and partition metadata fetched page by page, so
topics with many partitions never need one huge Metadata response."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Iterable

from clients.admin.operations import Call, Operation, _fixed, _raise_for
from clients.protocol import ApiKey


@dataclass(frozen=True)
class PartitionDescription:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]


@dataclass(frozen=True)
class TopicPartitionsDescription:
    name: str
    topic_id: uuid.UUID
    is_internal: bool
    partitions: tuple[PartitionDescription, ...]


def describe_topic_partitions_page(names: Iterable[str], partition_limit: int = 2000,
                                   cursor: tuple[str, int] | None = None) -> Operation:
    """One page: the raw response (topics and `next_cursor`)."""
    body = {"topics": [{"name": n} for n in names], "response_partition_limit": partition_limit,
            "cursor": None if cursor is None else {"topic_name": cursor[0],
                                                   "partition_index": cursor[1]}}
    response = yield Call(ApiKey.DESCRIBE_TOPIC_PARTITIONS, _fixed(body))
    return response


def describe_topic_partitions(names: Iterable[str] = (), partition_limit: int = 2000
                              ) -> Operation:
    """{topic: TopicPartitionsDescription} of `names` (empty: every topic), following the
    cursor across pages of at most `partition_limit` partitions. Raises for a topic error."""
    wanted = list(names)
    described: dict[str, dict[str, Any]] = {}
    cursor: tuple[str, int] | None = None
    while True:
        response = yield from describe_topic_partitions_page(wanted, partition_limit, cursor)
        for topic in response["topics"]:
            _raise_for(topic["error_code"], None, f"topic {topic['name']!r}")
            entry = described.setdefault(topic["name"], {**topic, "partitions": []})
            entry["partitions"].extend(topic["partitions"])
        next_cursor = response.get("next_cursor")
        if next_cursor is None:
            break
        cursor = (next_cursor["topic_name"], next_cursor["partition_index"])
    return {name: TopicPartitionsDescription(
                name, t["topic_id"], t["is_internal"],
                tuple(PartitionDescription(p["partition_index"], p["leader_id"],
                                           p["leader_epoch"], tuple(p["replica_nodes"]),
                                           tuple(p["isr_nodes"]),
                                           tuple(p["offline_replicas"]))
                      for p in t["partitions"]))
            for name, t in described.items()}
