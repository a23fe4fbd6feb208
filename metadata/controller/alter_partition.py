"""AlterPartition: ISR changes (and recovery completion) requested by partition leaders."""

from __future__ import annotations

import logging
from typing import Any

from clients.protocol import ZERO_UUID, ErrorCode
from metadata.controller import Decision
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


def alter_partition(image: MetadataImage, request: dict[str, Any], now_ms: int) -> Decision:
    """AlterPartitionRequest (topics by `topic_id`, or `topic_name` before v2) -> records + response.

    Every accepted change bumps the partition epoch (on replay); the response carries the
    state after the change.
    """
    broker_id = request["broker_id"]
    code = check_broker_epoch(image, broker_id, request["broker_epoch"])
    if code != ErrorCode.NONE:
        return [], {"throttle_time_ms": 0, "error_code": code, "topics": []}
    records: list[MetadataRecord] = []
    topics_out = []
    for t in request.get("topics") or []:
        topic_id = t.get("topic_id")
        by_id = topic_id is not None and topic_id != ZERO_UUID
        topic = image.topic_by_id(topic_id) if by_id else image.topic(t.get("topic_name") or "")
        parts_out = []
        for p in t.get("partitions") or []:
            if topic is None:
                missing = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                parts_out.append(_error(p["partition_index"], missing))
                continue
            record, result = _alter_one(image, broker_id, topic, p)
            if record is not None:
                records.append(record)
            parts_out.append(result)
        topics_out.append(
            {
                "topic_id": topic.topic_id if topic is not None else (topic_id or ZERO_UUID),
                "topic_name": topic.name if topic is not None else t.get("topic_name"),
                "partitions": parts_out,
            }
        )
    return records, {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "topics": topics_out}


def _alter_one(
    image: MetadataImage, broker_id: int, topic: TopicImage, p: dict[str, Any]
) -> tuple[PartitionChangeRecord | None, dict[str, Any]]:
    index = p["partition_index"]
    part = topic.partitions.get(index)
    if part is None:
        return None, _error(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if p["leader_epoch"] != part.leader_epoch:
        return None, _error(index, ErrorCode.FENCED_LEADER_EPOCH)
    if part.leader != broker_id:
        return None, _error(index, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    if p["partition_epoch"] != part.partition_epoch:
        return None, _error(index, ErrorCode.INVALID_UPDATE_VERSION)

    with_epochs = p.get("new_isr_with_epochs")
    if with_epochs is not None:
        members = [(s["broker_id"], s.get("broker_epoch", -1)) for s in with_epochs]
    else:
        members = [(b, -1) for b in p.get("new_isr") or []]
    new_isr = tuple(b for b, _ in members)
    recovery = p.get("leader_recovery_state", LEADER_RECOVERED)
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


def _success(index: int, part: PartitionRegistration) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": ErrorCode.NONE,
        "leader_id": part.leader,
        "leader_epoch": part.leader_epoch,
        "isr": list(part.isr),
        "leader_recovery_state": part.leader_recovery_state,
        "partition_epoch": part.partition_epoch,
    }


def _error(index: int, code: int) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": code,
        "leader_id": -1,
        "leader_epoch": -1,
        "isr": [],
        "leader_recovery_state": LEADER_RECOVERED,
        "partition_epoch": -1,
    }
