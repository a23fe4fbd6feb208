"""AlterPartition: ISR changes (and recovery completion) requested by partition leaders."""

from __future__ import annotations

import logging

from clients.protocol import ZERO_UUID, ErrorCode
from clients.protocol.messages.alter_partition import (
    AlterPartitionRequestData,
    AlterPartitionResponseData,
)
from metadata.controller.brokers import check_broker_epoch
from metadata.controller.reassignments import with_reassignment_finished
from metadata.image import MetadataImage, PartitionRegistration, TopicImage
from metadata.records import (
    LEADER_RECOVERED,
    LEADER_RECOVERING,
    NO_RECOVERY_STATE_CHANGE,
    MetadataRecord,
    PartitionChangeRecord,
)

logger = logging.getLogger(__name__)

Response = AlterPartitionResponseData
PartitionResult = AlterPartitionResponseData.PartitionData


def alter_partition(image: MetadataImage, request: AlterPartitionRequestData,
                    now_ms: int) -> tuple[list[MetadataRecord], AlterPartitionResponseData]:
    """AlterPartitionRequest (topics by `topic_id`, or `topic_name` before v2) -> records + response.

    Every accepted change bumps the partition epoch (on replay); the response carries the
    state after the change.
    """
    broker_id = request.broker_id
    code = check_broker_epoch(image, broker_id, request.broker_epoch)
    if code != ErrorCode.NONE:
        return [], Response(error_code=code)
    records: list[MetadataRecord] = []
    topics_out = []
    for t in request.topics:
        by_id = t.topic_id != ZERO_UUID
        topic = image.topic_by_id(t.topic_id) if by_id else image.topic(t.topic_name)
        parts_out = []
        for p in t.partitions:
            if topic is None:
                missing = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                parts_out.append(_error(p.partition_index, missing))
                continue
            record, result = _alter_one(image, broker_id, topic, p)
            if record is not None:
                records.append(record)
            parts_out.append(result)
        topics_out.append(Response.TopicData(
            topic_id=topic.topic_id if topic is not None else t.topic_id,
            topic_name=topic.name if topic is not None else t.topic_name,
            partitions=parts_out,
        ))
    return records, Response(error_code=ErrorCode.NONE, topics=topics_out)


def _alter_one(
    image: MetadataImage, broker_id: int, topic: TopicImage,
    p: AlterPartitionRequestData.PartitionData,
) -> tuple[PartitionChangeRecord | None, PartitionResult]:
    index = p.partition_index
    part = topic.partitions.get(index)
    if part is None:
        return None, _error(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if p.leader_epoch != part.leader_epoch:
        return None, _error(index, ErrorCode.FENCED_LEADER_EPOCH)
    if part.leader != broker_id:
        return None, _error(index, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    if p.partition_epoch != part.partition_epoch:
        return None, _error(index, ErrorCode.INVALID_UPDATE_VERSION)

    # v3+ names the new ISR with broker epochs, earlier versions by id only; the other
    # field is empty.
    members = ([(s.broker_id, s.broker_epoch) for s in p.new_isr_with_epochs]
               or [(b, -1) for b in p.new_isr])
    new_isr = tuple(b for b, _ in members)
    recovery = p.leader_recovery_state
    if (
        not new_isr
        or len(set(new_isr)) != len(new_isr)
        or not set(new_isr) <= set(part.replicas)
        or broker_id not in new_isr
        or recovery not in (LEADER_RECOVERED, LEADER_RECOVERING)
        or (recovery == LEADER_RECOVERING and len(new_isr) > 1)
        or (recovery == LEADER_RECOVERING and part.leader_recovery_state == LEADER_RECOVERED)
    ):
        return None, _error(index, ErrorCode.INVALID_REQUEST)
    for member, epoch in members:
        reg = image.broker(member)
        if reg is None or not reg.is_active or (epoch != -1 and epoch != reg.epoch):
            return None, _error(index, ErrorCode.INELIGIBLE_REPLICA)

    if new_isr == part.isr and recovery == part.leader_recovery_state:
        return None, _success(index, part)
    record = PartitionChangeRecord(
        partition_id=index,
        topic_id=topic.topic_id,
        isr=None if new_isr == part.isr else new_isr,
        leader_recovery_state=(
            NO_RECOVERY_STATE_CHANGE if recovery == part.leader_recovery_state else recovery
        ),
    )
    logger.debug("%s-%d: ISR %s -> %s", topic.name, index, part.isr, new_isr)
    record = with_reassignment_finished(topic.topic_id, index, part, record,
                                        image.is_active_broker)
    return record, _success(index, part.merge(record))


def _success(index: int, part: PartitionRegistration) -> PartitionResult:
    return PartitionResult(
        partition_index=index,
        error_code=ErrorCode.NONE,
        leader_id=part.leader,
        leader_epoch=part.leader_epoch,
        isr=list(part.isr),
        leader_recovery_state=part.leader_recovery_state,
        partition_epoch=part.partition_epoch,
    )


def _error(index: int, code: int) -> PartitionResult:
    return PartitionResult(partition_index=index, error_code=code, leader_id=-1,
                           leader_epoch=-1, leader_recovery_state=LEADER_RECOVERED,
                           partition_epoch=-1)
