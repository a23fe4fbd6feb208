"""One partition replica on this broker: its log plus the leadership state from metadata.

Leader-side rules follow Kafka's Partition: a new leader epoch starts at the log end offset
(recorded in the leader epoch cache); the high watermark is the smallest log end offset over
the ISR and only moves forward; acks=all needs at least `min.insync.replicas` ISR members.
"""

from __future__ import annotations

import logging
import uuid

from broker.log.partition_log import PartitionLog
from broker.log.results import AppendResult
from broker.replica.errors import (
    FencedLeaderEpoch,
    NotEnoughReplicas,
    NotLeaderOrFollower,
    UnknownLeaderEpoch,
)
from metadata.image import PartitionRegistration

logger = logging.getLogger(__name__)

NO_LEADER = -1
UNKNOWN_OFFSET = -1


class Partition:
    """A local replica; the leader fields mirror the latest PartitionRegistration."""

    def __init__(self, broker_id: int, topic: str, partition_id: int, topic_id: uuid.UUID,
                 log: PartitionLog) -> None:
        self.broker_id = broker_id
        self.topic = topic
        self.partition_id = partition_id
        self.topic_id = topic_id
        self.log = log
        self.leader_id = NO_LEADER
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.replicas: tuple[int, ...] = ()
        self.isr: tuple[int, ...] = ()
        self.min_insync_replicas = 1
        # First offset of the current leader epoch (Kafka's leaderEpochStartOffsetOpt).
        self.leader_epoch_start_offset = UNKNOWN_OFFSET
        # Follower broker id -> the fetch offset it last sent (its log end offset).
        self.follower_end_offsets: dict[int, int] = {}

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition_id

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    def __repr__(self) -> str:
        return (f"Partition({self.topic}-{self.partition_id}, leader={self.leader_id}, "
                f"epoch={self.leader_epoch}, isr={list(self.isr)})")

    # -- state changes from metadata -----------------------------------------------------

    def _record(self, registration: PartitionRegistration) -> None:
        self.leader_id = registration.leader
        self.partition_epoch = registration.partition_epoch
        self.replicas = tuple(registration.replicas)
        self.isr = tuple(registration.isr)

    def make_leader(self, registration: PartitionRegistration) -> bool:
        """Lead under `registration`; returns whether this starts a new leader epoch."""
        new_epoch = registration.leader_epoch != self.leader_epoch or not self.is_leader
        self._record(registration)
        self.leader_epoch = registration.leader_epoch
        if new_epoch:
            leo = self.log.log_end_offset
            if self.leader_epoch >= 0 and self.leader_epoch > self.log.epoch_cache.latest_epoch:
                self.log.epoch_cache.assign(self.leader_epoch, leo)
            self.leader_epoch_start_offset = leo
            # Followers' positions are unknown until they fetch in this epoch.
            self.follower_end_offsets = {}
            logger.info("%s-%d: leader at epoch %d from offset %d, isr %s", self.topic,
                        self.partition_id, self.leader_epoch, leo, list(self.isr))
        else:
            self.follower_end_offsets = {r: o for r, o in self.follower_end_offsets.items()
                                         if r in self.replicas}
        self.maybe_increment_high_watermark()
        return new_epoch

    def make_follower(self, registration: PartitionRegistration) -> bool:
        """Follow under `registration`; returns whether the leader or its epoch changed."""
        changed = (registration.leader != self.leader_id
                   or registration.leader_epoch != self.leader_epoch)
        self._record(registration)
        self.leader_epoch = registration.leader_epoch
        self.leader_epoch_start_offset = UNKNOWN_OFFSET
        self.follower_end_offsets = {}
        if changed:
            logger.info("%s-%d: follower of %d at epoch %d", self.topic, self.partition_id,
                        self.leader_id, self.leader_epoch)
        return changed

    # -- leader checks -------------------------------------------------------------------

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """Kafka's check of a client's `current_leader_epoch` (-1 skips it)."""
        if current_leader_epoch < 0:
            return
        if current_leader_epoch < self.leader_epoch:
            raise FencedLeaderEpoch(
                f"{self.topic}-{self.partition_id}: epoch {current_leader_epoch} is older than "
                f"the current {self.leader_epoch}")
        if current_leader_epoch > self.leader_epoch:
            raise UnknownLeaderEpoch(
                f"{self.topic}-{self.partition_id}: epoch {current_leader_epoch} is newer than "
                f"the current {self.leader_epoch}")

    def require_leader(self) -> None:
        if not self.is_leader:
            raise NotLeaderOrFollower(
                f"broker {self.broker_id} is not the leader of {self.topic}-{self.partition_id} "
                f"(leader {self.leader_id})")

    # -- appends and the high watermark --------------------------------------------------

    def append_as_leader(self, batches: bytearray, required_acks: int,
                         now_ms: int | None = None) -> AppendResult:
        """Append a producer's batches (stamped in place); may raise broker.log errors."""
        self.require_leader()
        if required_acks == -1 and len(self.isr) < self.min_insync_replicas:
            raise NotEnoughReplicas(
                f"{self.topic}-{self.partition_id}: {len(self.isr)} in-sync replica(s), "
                f"min.insync.replicas is {self.min_insync_replicas}")
        result = self.log.append_as_leader(batches, self.leader_epoch, now_ms)
        self.maybe_increment_high_watermark()
        return result

    def maybe_increment_high_watermark(self) -> bool:
        """Move the HW up to the smallest LEO over the ISR; returns whether it moved."""
        if not self.is_leader:
            return False
        candidate = self.log.log_end_offset
        for replica in self.isr:
            if replica != self.broker_id:
                candidate = min(candidate, self.follower_end_offsets.get(replica, UNKNOWN_OFFSET))
        if candidate > self.log.high_watermark:
            self.log.update_high_watermark(candidate)
            return True
        return False

    def record_follower_fetch(self, replica_id: int, fetch_offset: int) -> bool:
        """A follower fetched from `fetch_offset` (its LEO); returns whether the HW moved.

        ISR changes (AlterPartition) belong to the replication work that comes next.
        """
        if replica_id not in self.replicas or replica_id == self.broker_id:
            return False
        self.follower_end_offsets[replica_id] = min(fetch_offset, self.log.log_end_offset)
        return self.maybe_increment_high_watermark()
