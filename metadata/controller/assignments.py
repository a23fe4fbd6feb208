"""Helpers shared by CreateTopics and CreatePartitions: ids, usable brokers, manual assignments."""

from __future__ import annotations

import base64
import random
import uuid
from collections.abc import Container, Sequence

from metadata.image import MetadataImage
from metadata.placement import UsableBroker
from metadata.records import PartitionRecord


class AssignmentError(ValueError):
    """A manual replica assignment is invalid (INVALID_REPLICA_ASSIGNMENT)."""


def usable_brokers(image: MetadataImage) -> list[UsableBroker]:
    """Brokers that may receive new replicas: registered, unfenced, not shutting down."""
    return [
        UsableBroker(reg.broker_id, reg.rack)
        for _, reg in sorted(image.brokers.items())
        if reg.is_active
    ]


def new_topic_id(rng: random.Random, taken: Container[uuid.UUID]) -> uuid.UUID:
    """A random version-4 id, never reused, whose base64 form does not start with '-'
    (Kafka avoids those because they read like command-line flags)."""
    while True:
        candidate = uuid.UUID(int=rng.getrandbits(128), version=4)
        if candidate in taken:
            continue
        if base64.urlsafe_b64encode(candidate.bytes).startswith(b"-"):
            continue
        return candidate


def check_manual_replicas(
    image: MetadataImage, partition_id: int, broker_ids: Sequence[int]
) -> tuple[int, ...]:
    """Validate one partition's manual replica list; returns it as a tuple."""
    replicas = tuple(broker_ids or ())
    if not replicas:
        raise AssignmentError(
            f"The manual partition assignment includes an empty replica list for partition {partition_id}."
        )
    if len(set(replicas)) != len(replicas):
        raise AssignmentError(
            f"The manual partition assignment includes the broker {_first_duplicate(replicas)} "
            f"more than once for partition {partition_id}."
        )
    for broker_id in replicas:
        reg = image.broker(broker_id)
        if reg is None or reg.fenced:
            raise AssignmentError(
                f"The manual partition assignment includes broker {broker_id} for partition "
                f"{partition_id}, but that broker is not registered or is fenced."
            )
    if not any(image.is_active_broker(b) for b in replicas):
        raise AssignmentError(
            f"All brokers specified in the manual partition assignment for partition "
            f"{partition_id} are in controlled shutdown."
        )
    return replicas


def new_partition_record(
    image: MetadataImage, topic_id: uuid.UUID, partition_id: int, replicas: tuple[int, ...]
) -> PartitionRecord:
    """A fresh partition: ISR = the active replicas, leader = the first of them."""
    isr = tuple(b for b in replicas if image.is_active_broker(b))
    return PartitionRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        replicas=replicas,
        isr=isr,
        leader=isr[0],
        leader_epoch=0,
        partition_epoch=0,
    )


def _first_duplicate(values: Sequence[int]) -> int:
    seen: set[int] = set()
    for v in values:
        if v in seen:
            return v
        seen.add(v)
    raise ValueError("no duplicate")
