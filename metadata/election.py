"""Leader election and ISR changes, expressed as PartitionChangeRecords.

Election follows Kafka: keep the current leader while it stays in the ISR and is eligible;
otherwise the first replica (in preferred order) that is in the ISR and eligible; otherwise,
only when unclean election is enabled, the first eligible replica, which becomes the sole
ISR member with leader_recovery_state RECOVERING; otherwise no leader (-1).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

from metadata.image import MetadataImage, PartitionRegistration, TopicImage
from metadata.records import (
    LEADER_RECOVERING,
    NO_LEADER,
    NO_LEADER_CHANGE,
    NO_RECOVERY_STATE_CHANGE,
    PartitionChangeRecord,
)
from metadata.settings import ControllerSettings
from metadata.topic_config_layers import BrokerLayers, resolve_topic_value
from metadata.topic_configs import ConfigValidationError

UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"

Eligible = Callable[[int], bool]


def unclean_election_enabled(image: MetadataImage, topic_name: str, settings: ControllerSettings) -> bool:
    """The topic's unclean.leader.election.enable as the active controller resolves it, as
    Kafka's does: the topic override, this controller node's own dynamic broker config, the
    cluster-wide dynamic default, then its static setting."""
    static = {UNCLEAN_LEADER_ELECTION_ENABLE:
              "true" if settings.unclean_leader_election_enable else "false"}
    layers = BrokerLayers.from_image(image, settings.node_id, static)
    try:
        return bool(resolve_topic_value(UNCLEAN_LEADER_ELECTION_ENABLE,
                                        image.topic_config(topic_name), layers))
    except ConfigValidationError:
        return False  # never lose committed data over a value that does not parse


def elect(
    part: PartitionRegistration,
    isr: tuple[int, ...],
    eligible: Eligible,
    unclean: bool,
    prefer_first_replica: bool = False,
) -> tuple[int, tuple[int, ...], bool]:
    """(leader, isr, unclean_elected) for `part` given the target ISR."""
    if prefer_first_replica and part.replicas:
        first = part.replicas[0]
        if first in isr and eligible(first):
            return first, isr, False
    if part.leader in isr and eligible(part.leader):
        return part.leader, isr, False
    for replica in part.replicas:
        if replica in isr and eligible(replica):
            return replica, isr, False
    if unclean:
        for replica in part.replicas:
            if eligible(replica):
                return replica, (replica,), True
    return NO_LEADER, isr, False


def build_partition_change(
    topic_id: uuid.UUID,
    partition_id: int,
    part: PartitionRegistration,
    *,
    target_isr: tuple[int, ...] | None = None,
    eligible: Eligible,
    unclean: bool = False,
    prefer_first_replica: bool = False,
    leader_recovery_state: int | None = None,
) -> PartitionChangeRecord | None:
    """The record moving `part` to `target_isr` with a fresh election, or None if nothing changes."""
    isr = part.isr if target_isr is None else tuple(target_isr)
    if not isr:
        raise ValueError("an ISR never becomes empty")
    leader, isr, unclean_elected = elect(part, isr, eligible, unclean, prefer_first_replica)
    recovery = part.leader_recovery_state if leader_recovery_state is None else leader_recovery_state
    if unclean_elected:
        recovery = LEADER_RECOVERING
    change = PartitionChangeRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        isr=None if isr == part.isr else isr,
        leader=NO_LEADER_CHANGE if leader == part.leader else leader,
        leader_recovery_state=(
            NO_RECOVERY_STATE_CHANGE if recovery == part.leader_recovery_state else recovery
        ),
    )
    if change.isr is None and change.leader == NO_LEADER_CHANGE and change.leader_recovery_state == -1:
        return None
    return change


def iter_partitions(image: MetadataImage) -> Iterator[tuple[TopicImage, int, PartitionRegistration]]:
    """Every partition in a stable order (topic name, partition id)."""
    for name in sorted(image.topics_by_name):
        topic = image.topics_by_name[name]
        for pid in sorted(topic.partitions):
            yield topic, pid, topic.partitions[pid]


def remove_broker_changes(
    image: MetadataImage, broker_id: int, settings: ControllerSettings
) -> list[PartitionChangeRecord]:
    """Take `broker_id` out of every ISR and leadership (fencing, controlled shutdown).

    The last ISR member is never removed: the ISR keeps it and the partition gets no leader
    (unless an unclean election finds another live replica).
    """

    def eligible(b: int) -> bool:
        return b != broker_id and image.is_active_broker(b)

    out = []
    for topic, pid, part in iter_partitions(image):
        if broker_id not in part.isr and part.leader != broker_id:
            continue
        target = tuple(b for b in part.isr if b != broker_id) or part.isr
        change = build_partition_change(
            topic.topic_id,
            pid,
            part,
            target_isr=target,
            eligible=eligible,
            unclean=unclean_election_enabled(image, topic.name, settings),
        )
        if change is not None:
            out.append(change)
    return out


def leaderless_changes(
    image: MetadataImage, broker_id: int, settings: ControllerSettings
) -> list[PartitionChangeRecord]:
    """Elect leaders for leaderless partitions hosted on `broker_id` (treated as live)."""

    def eligible(b: int) -> bool:
        return b == broker_id or image.is_active_broker(b)

    out = []
    for topic, pid, part in iter_partitions(image):
        if part.leader != NO_LEADER or broker_id not in part.replicas:
            continue
        change = build_partition_change(
            topic.topic_id,
            pid,
            part,
            eligible=eligible,
            unclean=unclean_election_enabled(image, topic.name, settings),
        )
        if change is not None:
            out.append(change)
    return out


def preferred_leader_changes(image: MetadataImage) -> list[PartitionChangeRecord]:
    """Move leadership back to the preferred (first) replica where it is live and in the ISR.

    The automatic rebalance (`metadata.controller.leader_election.rebalance_changes`) does
    this for the brokers over `leader.imbalance.per.broker.percentage` only.
    """
    out = []
    for topic, pid, part in iter_partitions(image):
        preferred = part.preferred_leader
        if preferred == part.leader or preferred not in part.isr:
            continue
        if not image.is_active_broker(preferred):
            continue
        out.append(PartitionChangeRecord(partition_id=pid, topic_id=topic.topic_id, leader=preferred))
    return out


def leaderships(image: MetadataImage, broker_id: int) -> int:
    """How many partitions `broker_id` currently leads."""
    return sum(1 for _, _, part in iter_partitions(image) if part.leader == broker_id)
