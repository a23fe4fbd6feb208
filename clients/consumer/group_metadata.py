"""The consumer's group identity, as a transactional producer needs it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConsumerGroupMetadata:
    """What ``send_offsets_to_transaction`` needs of a consumer (Kafka's
    ConsumerGroupMetadata): the group and, for a subscribed member, its generation, so the
    coordinator refuses offsets from a member that was rebalanced out."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
