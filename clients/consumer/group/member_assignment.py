"""What a KIP-848 member owns and its way to the coordinator's target assignment, without
I/O: the target (topic ids) resolved through the topic names metadata gave, one
reconciliation at a time (revoke, then take on the rest), and partitions lost when the
member is fenced or leaves."""

from __future__ import annotations

import uuid
from typing import Iterable

from clients.common.cluster import ClusterMetadata
from clients.consumer.group.protocol import TopicPartition
from clients.consumer.group.reconcile import Reconciliation, TopicIdAssignment, reconcile, resolve


class MemberAssignment:
    """The owned partitions and the reconciliation under way (see the module docstring)."""

    def __init__(self) -> None:
        self.owned: list[TopicPartition] = []
        self.lost = False                     # owned partitions may be another's already
        self.target: TopicIdAssignment | None = None     # the coordinator's latest
        self.names: dict[uuid.UUID, str] = {}            # topic id -> name
        self.ids: dict[str, uuid.UUID] = {}              # name -> topic id
        self.metadata_wanted = False          # some target topic ids have no name yet
        # The reconciliation under way: the assignment it ends with, what it revokes
        # first, then what the application takes on (and which of it is new).
        self.planned: tuple[TopicPartition, ...] | None = None
        self.to_revoke: list[TopicPartition] = []
        self.pending: list[TopicPartition] | None = None
        self.pending_added: list[TopicPartition] = []

    def learn_topics(self, cluster: ClusterMetadata) -> None:
        for name, info in cluster.topics.items():
            if info.topic_id.int:
                self.names[info.topic_id] = name
                self.ids[name] = info.topic_id

    def clear(self) -> None:
        """Drop the reconciliation under way."""
        self.planned = None
        self.to_revoke = []
        self.pending = None
        self.pending_added = []

    def forget(self) -> None:
        """Drop the target and the reconciliation: the member is out of the group."""
        self.clear()
        self.target = None

    def lose(self) -> None:
        """Out of the group while holding partitions: the application gives them up as
        lost (no commit)."""
        self.forget()
        self.lost = bool(self.owned)

    def reconcile(self) -> Reconciliation | None:
        """Start moving towards the target; None when a reconciliation is under way
        (the next starts when it ends) or nothing is to change."""
        if self.target is None or self.planned is not None:
            return None
        resolved = resolve(self.target, self.names)
        # Partitions of unnamed topics wait for metadata; the rest reconcile now.
        self.metadata_wanted = bool(resolved.unknown_ids)
        step = reconcile(self.owned, resolved.partitions)
        if not step.changes:
            return None
        self.planned = step.assignment
        self.to_revoke = list(step.revoke)
        if not self.to_revoke:
            self.pending, self.pending_added = list(step.assignment), list(step.add)
        return step

    def partitions_to_revoke(self) -> list[TopicPartition] | None:
        """All owned partitions when lost, else those the reconciliation revokes."""
        if self.lost and self.owned:
            return list(self.owned)
        return list(self.to_revoke) if self.to_revoke else None

    def revoked(self, partitions: Iterable[TopicPartition] | None) -> None:
        """The application gave up ``partitions`` (None: all it owned)."""
        gone = set(self.owned if partitions is None else partitions)
        self.owned = [tp for tp in self.owned if tp not in gone]
        self.to_revoke = [tp for tp in self.to_revoke if tp not in gone]
        if not self.owned:
            self.lost = False
        if self.planned is not None and not self.to_revoke:
            # Now the application takes on the rest (``on_assign`` runs even when
            # nothing is added, as in Kafka's consumer).
            still = set(self.owned)
            self.pending = list(self.planned)
            self.pending_added = [tp for tp in self.planned if tp not in still]

    def take(self) -> list[TopicPartition] | None:
        """The application takes the pending assignment: the reconciliation is over."""
        pending = self.pending
        if pending is not None:
            self.owned = list(pending)
            self.lost = False
            self.clear()
        return pending
