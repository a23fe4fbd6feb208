"""One partition replica on this broker: its log plus the leadership state from metadata.

Leader-side rules follow Kafka's Partition: a new leader epoch starts at the log end offset
(recorded in the leader epoch cache); the high watermark is the smallest log end offset over
the maximal ISR (the committed ISR plus a member being added) and only moves forward;
acks=all needs at least `min.insync.replicas` committed ISR members. ISR changes are only
proposed here (one in flight at a time); the ISR changes once the controller committed it.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any, Callable

from broker.log.errors import InvalidTxnState
from broker.log.partition_log import PartitionLog
from broker.log.results import AppendResult
from broker.replica.errors import (
    FencedLeaderEpoch,
    NotEnoughReplicas,
    NotLeaderOrFollower,
    UnknownLeaderEpoch,
)
from broker.replica.follower_state import UNKNOWN_OFFSET, FollowerState
from broker.replica.txn_verification import VerificationGuard
from broker.stats.counters import BrokerTopicStats, ReplicaStats
from clients.clock import wall_clock_ms
from clients.protocol import ErrorCode
from metadata.image import PartitionRegistration

logger = logging.getLogger(__name__)

NO_LEADER = -1

# AlterPartition errors after which the leader drops its proposal and waits for metadata
# (Kafka's Partition.handleAlterPartitionError); any other error is retried.
_ABANDON_ERRORS = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.INVALID_UPDATE_VERSION,
    ErrorCode.INVALID_REQUEST, ErrorCode.INELIGIBLE_REPLICA,
})


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
        # Follower broker id -> what its fetches told this leader.
        self.followers: dict[int, FollowerState] = {}
        # The ISR proposed to the controller and not yet answered (None: nothing in flight).
        self.pending_isr: tuple[int, ...] | None = None
        # Producer id -> the KIP-890 verification in progress for its next transaction here.
        self._verification_guards: dict[int, VerificationGuard] = {}
        # Where produce traffic and ISR changes are counted (set by the ReplicaManager).
        self.topic_stats: BrokerTopicStats | None = None
        self.replica_stats: ReplicaStats | None = None

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

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The committed ISR plus any member a pending change adds (Kafka's maximalIsr)."""
        if self.pending_isr is None:
            return self.isr
        return self.isr + tuple(r for r in self.pending_isr if r not in self.isr)

    @property
    def is_under_replicated(self) -> bool:
        return self.is_leader and len(self.isr) < len(self.replicas)

    @property
    def is_under_min_isr(self) -> bool:
        """Fewer in-sync replicas than min.insync.replicas: acks=all writes cannot succeed."""
        return len(self.isr) < self.min_insync_replicas

    def __repr__(self) -> str:
        return (f"Partition({self.topic}-{self.partition_id}, leader={self.leader_id}, "
                f"epoch={self.leader_epoch}, isr={list(self.isr)})")

    # -- state changes from metadata -----------------------------------------------------

    def _record(self, registration: PartitionRegistration) -> None:
        self.leader_id = registration.leader
        self.partition_epoch = registration.partition_epoch
        self.replicas = tuple(registration.replicas)
        self.isr = tuple(registration.isr)

    def make_leader(self, registration: PartitionRegistration, now_ms: int | None = None) -> bool:
        """Lead under `registration`; returns whether this starts a new leader epoch."""
        now_ms = wall_clock_ms() if now_ms is None else now_ms
        new_epoch = registration.leader_epoch != self.leader_epoch or not self.is_leader
        if not new_epoch and registration.partition_epoch < self.partition_epoch:
            return False  # an AlterPartition answer already gave us a newer state
        if registration.partition_epoch != self.partition_epoch:
            self.pending_isr = None
            if not new_epoch and self.replica_stats is not None:
                # Our ISR change, committed: metadata may bring it before the answer does.
                self.replica_stats.record_isr_change(self.isr, tuple(registration.isr))
        self._record(registration)
        self.leader_epoch = registration.leader_epoch
        if new_epoch:
            leo = self.log.log_end_offset
            if self.leader_epoch >= 0 and self.leader_epoch > self.log.epoch_cache.latest_epoch:
                self.log.epoch_cache.assign(self.leader_epoch, leo)
            self.leader_epoch_start_offset = leo
            self.pending_isr = None
            # Followers' positions are unknown until they fetch in this epoch.
            self.followers = {r: FollowerState.initial(r in self.isr, now_ms)
                              for r in self.replicas if r != self.broker_id}
            logger.info("%s-%d: leader at epoch %d from offset %d, isr %s", self.topic,
                        self.partition_id, self.leader_epoch, leo, list(self.isr))
        else:
            self.followers = {r: self.followers.get(r) or FollowerState.initial(
                r in self.isr, now_ms) for r in self.replicas if r != self.broker_id}
        self.maybe_increment_high_watermark()
        return new_epoch

    def make_follower(self, registration: PartitionRegistration) -> bool:
        """Follow under `registration`; returns whether the leader or its epoch changed."""
        changed = (registration.leader != self.leader_id
                   or registration.leader_epoch != self.leader_epoch)
        self._record(registration)
        self.leader_epoch = registration.leader_epoch
        self.leader_epoch_start_offset = UNKNOWN_OFFSET
        self.followers = {}
        self.pending_isr = None
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

    def caught_up_fetch(self, replica_id: int, fetch_offset: int, current_leader_epoch: int,
                        last_fetched_epoch: int, now_ms: int) -> bool:
        """A fetch by an in-sync follower already at the log end, in this leader's epoch
        and with no divergence to report (most partitions of a follower's session, most of
        the time): its fetch time is recorded and True returned, as the full path would end
        with nothing to read, no HW to move and no ISR change. False for anything else."""
        if not self.is_leader or replica_id not in self.isr:
            return False
        log = self.log
        if log.offline or fetch_offset != log.log_end_offset:
            return False
        if current_leader_epoch >= 0 and current_leader_epoch != self.leader_epoch:
            return False
        if last_fetched_epoch >= 0 and last_fetched_epoch != log.epoch_cache.latest_epoch:
            return False
        state = self.followers.get(replica_id)
        if state is None or state.log_end_offset != fetch_offset:
            return False
        state.update_fetch(fetch_offset, fetch_offset, now_ms)
        return True

    def require_leader(self) -> None:
        if not self.is_leader:
            raise NotLeaderOrFollower(
                f"broker {self.broker_id} is not the leader of {self.topic}-{self.partition_id} "
                f"(leader {self.leader_id})")

    # -- appends and the high watermark --------------------------------------------------

    def needs_verification(self, producer_id: int) -> bool:
        """Whether a transactional batch of `producer_id` must be verified first: it has no
        ongoing transaction in this partition."""
        return not self.log.producer_state.has_ongoing_txn(producer_id)

    def start_verification(self, producer_id: int) -> VerificationGuard:
        """The producer's current guard, or a new one. Shared, as Kafka's verification
        state entry is: a producer may have several Produce requests for the partition in
        flight, and a later one must not void the guard of an earlier one."""
        guard = self._verification_guards.get(producer_id)
        if guard is None:
            guard = self._verification_guards[producer_id] = VerificationGuard(producer_id)
        return guard

    def end_verification(self, guard: VerificationGuard) -> None:
        """Forget `guard` (its verification failed, or its batch was appended)."""
        if self._verification_guards.get(guard.producer_id) is guard:
            del self._verification_guards[guard.producer_id]

    def append_as_leader(self, batches: bytearray, required_acks: int,
                         now_ms: int | None = None,
                         verification: VerificationGuard | None = None) -> AppendResult:
        """Append a producer's batches (stamped in place); may raise broker.log errors.
        With `verification`, the append needs that guard to be still current (no marker
        since) unless the producer's transaction is already open here."""
        self.require_leader()
        if required_acks == -1 and self.is_under_min_isr:
            raise NotEnoughReplicas(
                f"{self.topic}-{self.partition_id}: {len(self.isr)} in-sync replica(s), "
                f"min.insync.replicas is {self.min_insync_replicas}")
        if verification is not None:
            pid = verification.producer_id
            if (self._verification_guards.get(pid) is not verification
                    and not self.log.producer_state.has_ongoing_txn(pid)):
                raise InvalidTxnState(f"{self.topic}-{self.partition_id}: the transaction of "
                                      f"producer {pid} ended while its partition was verified")
        result = self.log.append_as_leader(batches, self.leader_epoch, now_ms)
        if verification is not None:
            self.end_verification(verification)
        if self.topic_stats is not None and not result.duplicate:
            self.topic_stats.record_produce(self.topic, len(batches), result.records_count)
        self.maybe_increment_high_watermark()
        return result

    def append_marker(self, committed: bool, producer_id: int, producer_epoch: int,
                      coordinator_epoch: int, now_ms: int | None = None) -> AppendResult:
        """Append a transaction marker as the leader, with acks=all's min.insync.replicas
        check (the caller waits for the HW to pass it)."""
        self.require_leader()
        if self.is_under_min_isr:
            raise NotEnoughReplicas(
                f"{self.topic}-{self.partition_id}: {len(self.isr)} in-sync replica(s), "
                f"min.insync.replicas is {self.min_insync_replicas}")
        result = self.log.append_marker(committed, producer_id, producer_epoch, coordinator_epoch,
                                        self.leader_epoch, now_ms)
        self._verification_guards.pop(producer_id, None)
        self.maybe_increment_high_watermark()
        return result

    def maybe_increment_high_watermark(self) -> bool:
        """Move the HW up to the smallest LEO over the maximal ISR; returns whether it moved."""
        if not self.is_leader:
            return False
        candidate = self.log.log_end_offset
        for replica in self.maximal_isr:
            if replica != self.broker_id:
                state = self.followers.get(replica)
                candidate = min(candidate, UNKNOWN_OFFSET if state is None
                                else state.log_end_offset)
        if candidate > self.log.high_watermark:
            self.log.update_high_watermark(candidate)
            return True
        return False

    def record_follower_fetch(self, replica_id: int, fetch_offset: int,
                              now_ms: int | None = None) -> bool:
        """A follower fetched from `fetch_offset` (its LEO); returns whether the HW moved."""
        state = self.followers.get(replica_id)
        if state is None or not self.is_leader:
            return False
        now_ms = wall_clock_ms() if now_ms is None else now_ms
        leo = self.log.log_end_offset
        before = state.log_end_offset
        state.update_fetch(min(fetch_offset, leo), leo, now_ms)
        # An unchanged follower LEO cannot move the HW: every other input (an append, an
        # ISR change, another follower's fetch) recomputes it where it changes.
        return state.log_end_offset != before and self.maybe_increment_high_watermark()

    # -- ISR changes ---------------------------------------------------------------------

    def isr_expansion(self, replica_id: int,
                      is_eligible: Callable[[int], bool] = lambda _: True) -> tuple[int, ...] | None:
        """The ISR to propose when `replica_id` may rejoin (Kafka's maybeExpandIsr): its LEO
        reached the HW and the start of this leader epoch. None when nothing should change."""
        state = self.followers.get(replica_id)
        if (not self.is_leader or self.pending_isr is not None or state is None
                or replica_id in self.isr or replica_id not in self.replicas):
            return None
        end = state.log_end_offset
        if (end >= self.log.high_watermark and end >= self.leader_epoch_start_offset >= 0
                and is_eligible(replica_id)):
            return self.isr + (replica_id,)
        return None

    def out_of_sync_replicas(self, now_ms: int, max_lag_ms: int) -> tuple[int, ...]:
        """ISR followers not caught up within `max_lag_ms`."""
        leo = self.log.log_end_offset
        return tuple(r for r in self.isr if r != self.broker_id and (
            (state := self.followers.get(r)) is None
            or not state.is_caught_up(leo, now_ms, max_lag_ms)))

    def isr_shrink(self, now_ms: int, max_lag_ms: int) -> tuple[int, ...] | None:
        """The ISR to propose without lagging followers (Kafka's maybeShrinkIsr), or None."""
        if not self.is_leader or self.pending_isr is not None:
            return None
        lagging = self.out_of_sync_replicas(now_ms, max_lag_ms)
        if not lagging:
            return None
        return tuple(r for r in self.isr if r not in lagging)

    def alter_partition_item(self, new_isr: tuple[int, ...],
                             broker_epochs: dict[int, int]) -> dict[str, Any]:
        """Mark `new_isr` pending and return its AlterPartition (v3) partition entry."""
        self.pending_isr = tuple(new_isr)
        return {"partition_index": self.partition_id, "leader_epoch": self.leader_epoch,
                "new_isr_with_epochs": [{"broker_id": b, "broker_epoch": broker_epochs.get(b, -1)}
                                        for b in new_isr],
                "leader_recovery_state": 0, "partition_epoch": self.partition_epoch}

    def _drop_pending_isr(self) -> None:
        # A member the proposal added no longer holds the HW back (follower fetches that
        # leave a LEO unchanged do not recompute it).
        self.pending_isr = None
        self.maybe_increment_high_watermark()

    def on_alter_partition_result(self, sent_leader_epoch: int, sent_partition_epoch: int,
                                  result: dict[str, Any] | None) -> bool:
        """Apply the controller's answer to a proposal; returns whether to retry it.

        `result` None means the request failed as a whole (no controller answer).
        """
        if (not self.is_leader or self.leader_epoch != sent_leader_epoch
                or self.partition_epoch != sent_partition_epoch):
            return False  # metadata moved on (which dropped the proposal); it is moot
        if result is None:
            return self.pending_isr is not None
        code = int(result.get("error_code", ErrorCode.NONE))
        if code != ErrorCode.NONE:
            if code in _ABANDON_ERRORS:
                logger.info("%s-%d: AlterPartition to %s refused (%s); waiting for metadata",
                            self.topic, self.partition_id, self.pending_isr,
                            ErrorCode(code).name)
                self._drop_pending_isr()
                return False
            return self.pending_isr is not None
        if (result["leader_epoch"] != self.leader_epoch
                or result["partition_epoch"] < self.partition_epoch):
            self._drop_pending_isr()
            return False
        logger.info("%s-%d: ISR %s -> %s (partition epoch %d)", self.topic, self.partition_id,
                    list(self.isr), list(result["isr"]), result["partition_epoch"])
        if self.replica_stats is not None:
            self.replica_stats.record_isr_change(self.isr, tuple(result["isr"]))
        self.isr = tuple(result["isr"])
        self.partition_epoch = int(result["partition_epoch"])
        self.pending_isr = None
        self.maybe_increment_high_watermark()
        return False
