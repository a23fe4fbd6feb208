"""Partition reassignment (KIP-455): the controller's decisions.

A reassignment first grows the replica set: replicas become the target followed by the
original replicas not in it, with `adding` (target - original) and `removing` (original -
target) recorded on the partition. New replicas catch up by fetching like any follower and
join the ISR through AlterPartition. Once every target replica is in the ISR the controller
finishes: replicas = target, ISR = ISR & target, a new leader from the target when the
leader is being removed, and empty adding/removing lists. Cancelling reverts to the original
replicas (current - adding). Everything is in PartitionChangeRecords, so an ongoing
reassignment survives controller failover and restarts.

Validation follows Kafka's ReplicationControlManager: an empty target, a broker named twice
or a broker that is not registered is INVALID_REPLICA_ASSIGNMENT; a missing topic or
partition UNKNOWN_TOPIC_OR_PARTITION; cancelling where nothing moves
NO_REASSIGNMENT_IN_PROGRESS. Both APIs' responses, error answers included, are defined here
once.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import replace
from collections.abc import Callable, Sequence

from clients.protocol import ErrorCode
from clients.protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequestData,
    AlterPartitionReassignmentsResponseData,
)
from clients.protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequestData,
    ListPartitionReassignmentsResponseData,
)
from metadata.controller.rejection import Rejected, error_text
from metadata.delta import apply_records
from metadata.election import iter_partitions
from metadata.image import MetadataImage, PartitionRegistration
from metadata.records import NO_LEADER, NO_LEADER_CHANGE, MetadataRecord, PartitionChangeRecord

logger = logging.getLogger(__name__)

Eligible = Callable[[int], bool]
AlterResponse = AlterPartitionReassignmentsResponseData
ListResponse = ListPartitionReassignmentsResponseData


def alter_partition_reassignments_error(body: AlterPartitionReassignmentsRequestData,
                                        version: int, code: int, message: str | None = None
                                        ) -> AlterResponse:
    """The request-wide `code` at top level and on every partition named."""
    text = error_text(code, message)
    return AlterResponse(error_code=code, error_message=text, responses=[
        AlterResponse.ReassignableTopicResponse(name=topic.name, partitions=[
            AlterResponse.ReassignablePartitionResponse(
                partition_index=p.partition_index, error_code=code, error_message=text)
            for p in topic.partitions])
        for topic in body.topics])


def list_partition_reassignments_error(body: ListPartitionReassignmentsRequestData,
                                       version: int, code: int, message: str | None = None
                                       ) -> ListResponse:
    """The top-level `code` and no topics."""
    return ListResponse(error_code=code, error_message=error_text(code, message))


def is_reassigning(part: PartitionRegistration) -> bool:
    return bool(part.adding_replicas or part.removing_replicas)


def validate_target(image: MetadataImage, target: Sequence[int]) -> tuple[int, ...]:
    """The target replica list, or Rejected with INVALID_REPLICA_ASSIGNMENT."""
    replicas = tuple(int(b) for b in target)
    if not replicas:
        raise Rejected(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                       "The manual partition assignment includes an empty replica list.")
    seen: set[int] = set()
    for broker_id in replicas:
        if broker_id in seen:
            raise Rejected(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"The manual partition assignment includes the broker {broker_id} "
                           "more than once.")
        seen.add(broker_id)
        if image.broker(broker_id) is None:
            raise Rejected(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"The manual partition assignment includes broker {broker_id}, but "
                           "no such broker is registered.")
    return replicas


def _change(topic_id: uuid.UUID, partition_id: int, part: PartitionRegistration, *,
            replicas: tuple[int, ...], isr: tuple[int, ...], leader: int,
            adding: tuple[int, ...], removing: tuple[int, ...]) -> PartitionChangeRecord | None:
    """The record taking `part` to the given state (only what differs), or None."""
    change = PartitionChangeRecord(
        partition_id=partition_id, topic_id=topic_id,
        replicas=None if replicas == part.replicas else replicas,
        isr=None if isr == part.isr else isr,
        leader=NO_LEADER_CHANGE if leader == part.leader else leader,
        adding_replicas=None if adding == part.adding_replicas else adding,
        removing_replicas=None if removing == part.removing_replicas else removing)
    if (change.replicas is None and change.isr is None and change.leader == NO_LEADER_CHANGE
            and change.adding_replicas is None and change.removing_replicas is None):
        return None
    return change


def _leader_among(candidates: Sequence[int], isr: Sequence[int], current: int,
                  eligible: Eligible) -> int:
    """The current leader if it stays a candidate, else the first eligible candidate in the
    ISR (NO_LEADER if none)."""
    if current in candidates and current in isr:
        return current
    return next((b for b in candidates if b in isr and eligible(b)), NO_LEADER)


def completed_state(part: PartitionRegistration, isr: tuple[int, ...], eligible: Eligible
                    ) -> tuple[tuple[int, ...], tuple[int, ...], int] | None:
    """(replicas, isr, leader) finishing the reassignment of `part` given `isr`, or None
    while a target replica is still outside the ISR, or while no target replica could lead
    (finishing then would take the partition offline)."""
    if not is_reassigning(part):
        return None
    target = tuple(b for b in part.replicas if b not in part.removing_replicas)
    if not target or not set(target) <= set(isr):
        return None
    new_isr = tuple(b for b in isr if b in target)
    leader = _leader_among(target, new_isr, part.leader, eligible)
    if leader == NO_LEADER:
        return None
    return target, new_isr, leader


def finish_if_complete(topic_id: uuid.UUID, partition_id: int, part: PartitionRegistration,
                       eligible: Eligible) -> PartitionChangeRecord | None:
    """The record completing `part`'s reassignment if its ISR now holds every target
    replica (after an ISR change or a new target), else None."""
    done = completed_state(part, part.isr, eligible)
    if done is None:
        return None
    replicas, isr, leader = done
    return _change(topic_id, partition_id, part, replicas=replicas, isr=isr, leader=leader,
                   adding=(), removing=())


def with_reassignment_finished(topic_id: uuid.UUID, partition_id: int,
                               part: PartitionRegistration, change: PartitionChangeRecord,
                               eligible: Eligible) -> PartitionChangeRecord:
    """`change` (an ISR change of `part`), extended to finish `part`'s reassignment when the
    new ISR holds every target replica: Kafka re-evaluates completion on each ISR change."""
    changed = part.merge(change)
    finish = finish_if_complete(topic_id, partition_id, changed, eligible)
    if finish is None:
        return change
    logger.info("partition %s:%d: reassignment complete, replicas %s", topic_id, partition_id,
                list(finish.replicas or changed.replicas))
    return replace(
        change,
        replicas=finish.replicas if finish.replicas is not None else change.replicas,
        isr=finish.isr if finish.isr is not None else change.isr,
        leader=finish.leader if finish.leader != NO_LEADER_CHANGE else change.leader,
        adding_replicas=finish.adding_replicas, removing_replicas=finish.removing_replicas)


def start(image: MetadataImage, topic_id: uuid.UUID, partition_id: int,
          part: PartitionRegistration, target: tuple[int, ...]) -> PartitionChangeRecord | None:
    """The record starting (or replacing) a reassignment of `part` to `target`, finished at
    once when the ISR already holds the whole target.

    A new target replaces an ongoing reassignment relative to the original replicas (the
    current ones minus those being added), as KIP-455 says: replicas still being added that
    the new target leaves out are dropped at once.
    """
    original = tuple(b for b in part.replicas if b not in part.adding_replicas)
    adding = tuple(b for b in target if b not in original)
    removing = tuple(b for b in original if b not in target)
    replicas = target + removing
    isr = tuple(b for b in part.isr if b in replicas)
    if not isr:
        raise Rejected(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                       "Unable to replace the partition reassignment because it would require "
                       "an unclean leader election.")
    leader = _leader_among(replicas, isr, part.leader, image.is_active_broker)
    grown = PartitionRegistration(replicas=replicas, isr=isr, leader=leader,
                                  removing_replicas=removing, adding_replicas=adding)
    done = completed_state(grown, isr, image.is_active_broker)
    if done is not None or (not adding and not removing):
        # Complete already (or only the order changes): no reassignment to track.
        replicas, isr, leader = done or (target, isr, leader)
        adding = removing = ()
    return _change(topic_id, partition_id, part, replicas=replicas, isr=isr, leader=leader,
                   adding=adding, removing=removing)


def cancel(image: MetadataImage, topic_id: uuid.UUID, partition_id: int,
           part: PartitionRegistration) -> PartitionChangeRecord | None:
    """The record reverting `part` to its original replicas (current - adding)."""
    if not is_reassigning(part):
        raise Rejected(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                       "No partition reassignment is in progress.")
    original = tuple(b for b in part.replicas if b not in part.adding_replicas)
    isr = tuple(b for b in part.isr if b in original)
    if not isr:
        # Kafka refuses a revert that would need an unclean leader election.
        raise Rejected(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                       "Unable to revert the partition assignment because it would require "
                       "an unclean leader election.")
    leader = _leader_among(original, isr, part.leader, image.is_active_broker)
    return _change(topic_id, partition_id, part, replicas=original, isr=isr, leader=leader,
                   adding=(), removing=())


def _alter_one(image: MetadataImage, topic_name: str, partition_id: int,
               replicas: Sequence[int] | None) -> PartitionChangeRecord | None:
    topic = image.topic(topic_name)
    part = None if topic is None else topic.partitions.get(partition_id)
    if topic is None or part is None:
        raise Rejected(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                       f"Unable to find partition {topic_name}:{partition_id}.")
    if replicas is None:
        return cancel(image, topic.topic_id, partition_id, part)
    return start(image, topic.topic_id, partition_id, part, validate_target(image, replicas))


def alter_partition_reassignments(image: MetadataImage,
                                  request: AlterPartitionReassignmentsRequestData,
                                  now_ms: int = 0) -> tuple[list[MetadataRecord], AlterResponse]:
    """AlterPartitionReassignmentsRequest -> records + response."""
    records: list[MetadataRecord] = []
    responses: list[AlterResponse.ReassignableTopicResponse] = []
    for topic in request.topics:
        name = topic.name
        answered: list[AlterResponse.ReassignablePartitionResponse] = []
        for entry in topic.partitions:
            index = entry.partition_index
            code, message = ErrorCode.NONE, None
            try:
                record = _alter_one(image, name, index, entry.replicas)
            except Rejected as rejected:
                code, message = rejected.code, rejected.message
            else:
                if record is not None:
                    records.append(record)
                    # Later entries for the same partition see this change.
                    image = _with_change(image, record)
                verb = "cancelled" if entry.replicas is None else "reassigning to"
                logger.info("%s-%d: %s %s", name, index, verb, entry.replicas or "")
            answered.append(AlterResponse.ReassignablePartitionResponse(
                partition_index=index, error_code=code, error_message=message))
        responses.append(AlterResponse.ReassignableTopicResponse(name=name, partitions=answered))
    return records, AlterResponse(error_code=ErrorCode.NONE, error_message=None,
                                  responses=responses)


def _with_change(image: MetadataImage, record: PartitionChangeRecord) -> MetadataImage:
    return apply_records(image, [record])[1]


def list_partition_reassignments(image: MetadataImage,
                                 request: ListPartitionReassignmentsRequestData,
                                 now_ms: int = 0) -> tuple[list[MetadataRecord], ListResponse]:
    """ListPartitionReassignmentsRequest -> the ongoing reassignments (no records).

    Unknown topics and partitions, and partitions not being moved, are left out.
    """
    named = request.topics
    ongoing: dict[str, list[ListResponse.OngoingPartitionReassignment]] = {}
    if named is None:
        wanted = [(topic.name, pid, part) for topic, pid, part in iter_partitions(image)]
    else:
        wanted = []
        for entry in named:
            topic = image.topic(entry.name)
            for pid in entry.partition_indexes:
                part = None if topic is None else topic.partitions.get(pid)
                if part is not None:
                    wanted.append((entry.name, pid, part))
    for name, pid, part in wanted:
        if is_reassigning(part):
            ongoing.setdefault(name, []).append(ListResponse.OngoingPartitionReassignment(
                partition_index=pid, replicas=list(part.replicas),
                adding_replicas=list(part.adding_replicas),
                removing_replicas=list(part.removing_replicas)))
    return [], ListResponse(error_code=ErrorCode.NONE, error_message=None, topics=[
        ListResponse.OngoingTopicReassignment(name=name, partitions=parts)
        for name, parts in ongoing.items()])
