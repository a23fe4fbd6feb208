"""Kafka's JSON files for `raftka reassign-partitions`, parsed and written without I/O.

Topics to move: `{"version": 1, "topics": [{"topic": "t"}]}`.
Reassignment: `{"version": 1, "partitions": [{"topic": "t", "partition": 0,
"replicas": [2, 3, 4], "log_dirs": ["any", "any", "any"]}]}` (`log_dirs` optional).
Written the way kafka-reassign-partitions.sh writes them: compact, sorted by topic and
partition, `log_dirs` all "any".
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

SUPPORTED_VERSION = 1
ANY_LOG_DIR = "any"

TopicPartition = tuple[str, int]
Assignment = dict[TopicPartition, tuple[int, ...]]


class ReassignmentInputError(ValueError):
    """A JSON file or option the tool cannot act on; the message is the one line to print."""


def _load(text: str) -> dict[str, Any]:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReassignmentInputError(
            f"The input string is not a valid JSON: {exc.msg} at line {exc.lineno} "
            f"column {exc.colno}") from None
    if not isinstance(document, dict):
        raise ReassignmentInputError("The input string is not a valid JSON: expected an "
                                     "object with \"version\"")
    version = document.get("version", SUPPORTED_VERSION)
    if version != SUPPORTED_VERSION or isinstance(version, bool):
        raise ReassignmentInputError(f"Not supported version field value {json.dumps(version)}")
    return document


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _entries(document: Mapping[str, Any], field: str) -> list[Any]:
    entries = document.get(field, [])
    if not isinstance(entries, list):
        raise ReassignmentInputError(f"\"{field}\" must be a list (got {json.dumps(entries)})")
    return entries


def parse_topics_to_move(text: str) -> list[str]:
    """The topic names of a topics-to-move file, in order; duplicates and a file naming no
    topic are errors."""
    topics: list[str] = []
    for entry in _entries(_load(text), "topics"):
        if not isinstance(entry, dict) or not isinstance(entry.get("topic"), str):
            raise ReassignmentInputError(
                f"each entry of \"topics\" needs a string \"topic\" (got {json.dumps(entry)})")
        topics.append(entry["topic"])
    duplicates = sorted(name for name, n in Counter(topics).items() if n > 1)
    if duplicates:
        raise ReassignmentInputError("List of topics to reassign contains duplicate entries: "
                                     + ",".join(duplicates))
    if not topics:
        raise ReassignmentInputError("List of topics to reassign is empty")
    return topics


def parse_broker_list(text: str) -> list[int]:
    """`--broker-list 1,2,3` as ids; a non-integer or a duplicate is an error."""
    try:
        brokers = [int(item) for item in text.split(",")]
    except ValueError:
        raise ReassignmentInputError(
            f"--broker-list must be comma-separated broker ids (got {text!r})") from None
    duplicates = sorted(b for b, n in Counter(brokers).items() if n > 1)
    if duplicates:
        raise ReassignmentInputError("Broker list contains duplicate entries: "
                                     + ",".join(map(str, duplicates)))
    return brokers


def parse_reassignment(text: str) -> Assignment:
    """The target replicas of a reassignment file, checked as Kafka's tool checks them
    before anything is sent."""
    entries: list[tuple[TopicPartition, tuple[int, ...]]] = []
    for entry in _entries(_load(text), "partitions"):
        entries.append(_partition_entry(entry))
    if not entries:
        raise ReassignmentInputError("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in entries):
        raise ReassignmentInputError("Partition replica list cannot be empty")
    seen = Counter(tp for tp, _ in entries)
    duplicated = sorted(tp for tp, n in seen.items() if n > 1)
    if duplicated:
        raise ReassignmentInputError("Partition reassignment contains duplicate topic "
                                     "partitions: " + ",".join(map(partition_name, duplicated)))
    repeated = []
    for tp, replicas in sorted(entries):
        twice = sorted(r for r, n in Counter(replicas).items() if n > 1)
        if twice:
            repeated.append(f"{partition_name(tp)} contains multiple entries for "
                            + ",".join(map(str, twice)))
    if repeated:
        raise ReassignmentInputError("Partition replica lists may not contain duplicate "
                                     "entries: " + ". ".join(repeated))
    return dict(entries)


def _partition_entry(entry: object) -> tuple[TopicPartition, tuple[int, ...]]:
    if (not isinstance(entry, dict) or not isinstance(entry.get("topic"), str)
            or not _is_int(entry.get("partition"))
            or not isinstance(entry.get("replicas"), list)
            or not all(_is_int(r) for r in entry["replicas"])):
        raise ReassignmentInputError(
            "each entry of \"partitions\" needs a string \"topic\", an integer \"partition\" "
            f"and a list of integer \"replicas\" (got {json.dumps(entry)})")
    tp = (entry["topic"], entry["partition"])
    replicas = tuple(entry["replicas"])
    log_dirs = entry.get("log_dirs", [ANY_LOG_DIR] * len(replicas))
    if not isinstance(log_dirs, list) or not all(isinstance(d, str) for d in log_dirs):
        raise ReassignmentInputError(f"\"log_dirs\" of {partition_name(tp)} must be a list "
                                     "of strings")
    if len(log_dirs) != len(replicas):
        raise ReassignmentInputError(
            f"Size of replicas list {list(replicas)} is different from size of log dirs list "
            f"{log_dirs} for partition {partition_name(tp)}")
    if any(d != ANY_LOG_DIR for d in log_dirs):
        # Kafka moves such replicas with AlterReplicaLogDirs, which Raftka does not serve.
        raise ReassignmentInputError(
            f"log_dirs of {partition_name(tp)}: moving a replica to a chosen log directory is "
            f"not supported; use \"{ANY_LOG_DIR}\"")
    return tp, replicas


def partition_name(tp: TopicPartition) -> str:
    """`topic-partition`, as Kafka's TopicPartition prints."""
    return f"{tp[0]}-{tp[1]}"


def format_reassignment(assignment: Mapping[TopicPartition, Sequence[int]]) -> str:
    """Kafka's reassignment JSON for `assignment`, on one line."""
    partitions = [{"topic": tp[0], "partition": tp[1], "replicas": list(replicas),
                   "log_dirs": [ANY_LOG_DIR] * len(replicas)}
                  for tp, replicas in sorted(assignment.items())]
    return json.dumps({"version": SUPPORTED_VERSION, "partitions": partitions},
                      separators=(",", ":"))
