"""Kafka's bounds on what one CreateTopics or CreatePartitions request may write, counted
from the request alone so an oversized one is refused before any assignment is built.

Kafka's controller refuses a CreateTopics asking for more than 10,000 partitions in all
(`MAX_PARTITIONS_PER_BATCH`) and any user operation of more than 10,000 records
(`MAX_RECORDS_PER_USER_OP`), both with POLICY_VIOLATION for every topic of the request.
A CreatePartitions writes one record per added partition, so its bound is the same number
of partitions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from clients.protocol.messages.create_partitions import CreatePartitionsRequestData
from clients.protocol.messages.create_topics import CreateTopicsRequestData
from metadata.image import MetadataImage

CreatableTopic = CreateTopicsRequestData.CreatableTopic
CreatePartitionsTopic = CreatePartitionsRequestData.CreatePartitionsTopic

MAX_PARTITIONS_PER_REQUEST = 10_000
MAX_RECORDS_PER_REQUEST = 10_000
TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."
TOO_MANY_RECORDS = "Unable to perform excessively large batch operation."


def requested_partitions(topic: CreatableTopic, default_num_partitions: int) -> int:
    """The partitions one CreatableTopic asks for, as Kafka counts them: its manual
    assignments, else `num_partitions` (-1: the default); a value Kafka refuses counts 0."""
    if topic.assignments:
        return len(topic.assignments)
    num_partitions = topic.num_partitions
    if num_partitions == -1:
        return default_num_partitions
    return max(num_partitions, 0)


def create_topics_partitions(topics: Iterable[CreatableTopic],
                             default_num_partitions: int) -> int:
    """The partitions a CreateTopics request asks for, over all its topics (validate-only
    requests and topics that will fail included, as Kafka's check counts them)."""
    return sum(requested_partitions(t, default_num_partitions) for t in topics)


def create_topics_refusal(topics: Iterable[CreatableTopic],
                          default_num_partitions: int) -> str | None:
    """The POLICY_VIOLATION message a CreateTopics of `topics` gets as a whole, or None."""
    if create_topics_partitions(topics, default_num_partitions) > MAX_PARTITIONS_PER_REQUEST:
        return TOO_MANY_PARTITIONS
    return None


def topic_creation_records(topic: CreatableTopic, default_num_partitions: int) -> int:
    """The records creating one topic writes: the topic, its partitions, its configs."""
    return 1 + requested_partitions(topic, default_num_partitions) + len(topic.configs)


def fits_one_create_topics(topics: Iterable[CreatableTopic],
                           default_num_partitions: int) -> bool:
    """Whether a controller would take `topics` in one CreateTopics (within both bounds,
    if every topic succeeds)."""
    partitions = records = 0
    for topic in topics:
        partitions += requested_partitions(topic, default_num_partitions)
        records += topic_creation_records(topic, default_num_partitions)
        if partitions > MAX_PARTITIONS_PER_REQUEST or records > MAX_RECORDS_PER_REQUEST:
            return False
    return True


def create_partitions_additions(image: MetadataImage,
                                topics: Iterable[CreatePartitionsTopic]) -> int:
    """The partitions a CreatePartitions request would add: for each existing topic named
    once, the new count above its current one."""
    entries = list(topics)
    name_counts = Counter(entry.name for entry in entries)
    added = 0
    for entry in entries:
        if name_counts[entry.name] > 1:
            continue  # refused as a duplicate: adds nothing
        topic = image.topic(entry.name)
        if topic is not None:
            added += max(entry.count - topic.partition_count(), 0)
    return added


def create_partitions_refusal(image: MetadataImage,
                              topics: Iterable[CreatePartitionsTopic]) -> str | None:
    """The POLICY_VIOLATION message a CreatePartitions gets as a whole, or None."""
    if create_partitions_additions(image, topics) > MAX_PARTITIONS_PER_REQUEST:
        return TOO_MANY_PARTITIONS
    return None
