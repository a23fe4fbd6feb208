"""ElectLeaders and the automatic leader rebalance: which partitions get a new leader.

Kafka's rules per partition (ReplicationControlManager.electLeader):
- PREFERRED: nothing to do when the preferred (first) replica leads (ELECTION_NOT_NEEDED);
  otherwise it must be live and in the ISR (else PREFERRED_LEADER_NOT_AVAILABLE).
- UNCLEAN: nothing to do while the partition has a leader (ELECTION_NOT_NEEDED); otherwise
  the first live ISR member, else the first live replica, which becomes the sole ISR member
  and recovers its log (else ELIGIBLE_LEADERS_NOT_AVAILABLE).
A request naming no partitions (null) covers every partition, and the response then leaves
out those that needed no election. The ElectLeaders response, error answer included, is
defined here once.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

from clients.protocol import ErrorCode
from clients.protocol.messages.elect_leaders import (
    ElectLeadersRequestData,
    ElectLeadersResponseData,
)
from metadata.controller.rejection import error_text
from metadata.election import build_partition_change, iter_partitions
from metadata.image import MetadataImage, PartitionRegistration
from metadata.records import NO_LEADER, MetadataRecord, PartitionChangeRecord

PREFERRED = 0
UNCLEAN = 1
ELECTION_TYPES = {PREFERRED: "PREFERRED", UNCLEAN: "UNCLEAN"}

PartitionResult = tuple[int, str | None]
ElectionResult = ElectLeadersResponseData.ReplicaElectionResult
PartitionOutcome = ElectLeadersResponseData.PartitionResult


def elect_leaders_error(body: ElectLeadersRequestData, version: int, code: int,
                        message: str | None = None) -> ElectLeadersResponseData:
    """Every named partition with `code`, and the top-level error from v1 (v0 has none)."""
    text = error_text(code, message)
    return ElectLeadersResponseData(
        error_code=code if version >= 1 else ErrorCode.NONE,
        replica_election_results=[
            ElectionResult(topic=entry.topic, partition_result=[
                PartitionOutcome(partition_id=p, error_code=code, error_message=text)
                for p in entry.partitions])
            for entry in body.topic_partitions or ()])


def elect_partition(image: MetadataImage, topic_name: str, partition_id: int,
                    election_type: int) -> tuple[PartitionResult, PartitionChangeRecord | None]:
    """The outcome of electing one partition's leader, and the record it takes."""
    topic = image.topic(topic_name)
    part = None if topic is None else topic.partitions.get(partition_id)
    if topic is None or part is None:
        return (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                f"The partition {topic_name}-{partition_id} does not exist."), None
    if election_type == PREFERRED:
        return _preferred(image, topic.topic_id, partition_id, part)
    return _unclean(image, topic.topic_id, partition_id, part)


def _preferred(image: MetadataImage, topic_id: Any, partition_id: int,
               part: PartitionRegistration) -> tuple[PartitionResult, PartitionChangeRecord | None]:
    preferred = part.preferred_leader
    if part.leader == preferred:
        return (ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."), None
    if preferred not in part.isr or not image.is_active_broker(preferred):
        return (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                f"Failed to elect leader for partition: preferred replica {preferred} is not "
                f"a live member of the ISR {list(part.isr)}."), None
    change = PartitionChangeRecord(partition_id=partition_id, topic_id=topic_id, leader=preferred)
    return (ErrorCode.NONE, None), change


def _unclean(image: MetadataImage, topic_id: Any, partition_id: int,
             part: PartitionRegistration) -> tuple[PartitionResult, PartitionChangeRecord | None]:
    if part.leader != NO_LEADER:
        return (ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."), None
    change = build_partition_change(topic_id, partition_id, part,
                                    eligible=image.is_active_broker, unclean=True)
    if change is None:
        return (ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                f"Failed to elect leader for partition: none of the replicas "
                f"{list(part.replicas)} is live."), None
    return (ErrorCode.NONE, None), change


def elect_leaders(image: MetadataImage, request: ElectLeadersRequestData, now_ms: int = 0
                  ) -> tuple[list[MetadataRecord], ElectLeadersResponseData]:
    """ElectLeadersRequest -> records + ElectLeadersResponse (latest version's fields)."""
    election_type = request.election_type
    if election_type not in ELECTION_TYPES:
        return [], ElectLeadersResponseData(error_code=ErrorCode.INVALID_REQUEST)
    named = request.topic_partitions
    every_partition = named is None
    if every_partition:
        wanted: Iterable[tuple[str, int]] = [
            (topic.name, pid) for topic, pid, _ in iter_partitions(image)]
    else:
        wanted = dict.fromkeys((entry.topic, p) for entry in named for p in entry.partitions)
    records: list[MetadataRecord] = []
    results: dict[str, list[PartitionOutcome]] = defaultdict(list)
    for topic_name, partition_id in wanted:
        (code, message), change = elect_partition(image, topic_name, partition_id, election_type)
        if change is not None:
            records.append(change)
        if every_partition and code == ErrorCode.ELECTION_NOT_NEEDED:
            continue
        results[topic_name].append(PartitionOutcome(partition_id=partition_id, error_code=code,
                                                     error_message=message))
    return records, ElectLeadersResponseData(error_code=ErrorCode.NONE, replica_election_results=[
        ElectionResult(topic=topic, partition_result=parts) for topic, parts in results.items()])


def imbalanced_brokers(image: MetadataImage, percentage: int) -> dict[int, float]:
    """Brokers whose share of preferred partitions led by another broker exceeds
    `percentage` (Kafka's leader.imbalance.per.broker.percentage), with that share."""
    preferred: dict[int, int] = defaultdict(int)
    not_led: dict[int, int] = defaultdict(int)
    for _, _, part in iter_partitions(image):
        broker = part.preferred_leader
        if broker == NO_LEADER:
            continue
        preferred[broker] += 1
        if part.leader != broker:
            not_led[broker] += 1
    return {broker: not_led[broker] / count for broker, count in preferred.items()
            if not_led[broker] / count * 100 > percentage}


def rebalance_changes(image: MetadataImage, percentage: int) -> list[PartitionChangeRecord]:
    """The automatic rebalance: preferred elections for the partitions of every broker over
    the imbalance threshold whose preferred replica is live and in the ISR."""
    over = imbalanced_brokers(image, percentage)
    changes = []
    for topic, pid, part in iter_partitions(image):
        if part.preferred_leader not in over:
            continue
        (code, _), change = _preferred(image, topic.topic_id, pid, part)
        if change is not None:
            changes.append(change)
    return changes
