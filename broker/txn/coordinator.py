"""The transaction coordinator (Kafka's TransactionCoordinator): the transactional APIs over
the state manager, the markers of prepared transactions, and the two periodic jobs (abort
of transactions past their timeout, expiry of idle transactional ids).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import trio

from broker.coordinator.partitions import CoordinatorLocation
from broker.producer_id_manager import ProducerIdManager, ProducerIdsUnavailable
from broker.txn import decisions, views
from broker.txn.marker_sender import MarkersFenced, MarkerSender
from broker.txn.metadata import PREPARED, TopicPartition, TxnEntry, TxnMetadata, TxnState
from broker.txn.state_manager import TransactionStateManager
from clients.clock import wall_clock_ms
from clients.protocol import ErrorCode
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage

logger = logging.getLogger(__name__)

# A Complete write that failed (e.g. too few in-sync replicas) is tried again after this.
COMPLETE_RETRY_S = 0.5


@dataclass(frozen=True)
class TransactionSettings:
    """Kafka's `transaction.*` broker settings."""

    max_timeout_ms: int = 900_000
    abort_interval_ms: int = 10_000
    expire_interval_ms: int = 3_600_000
    id_expiration_ms: int = 604_800_000

    @classmethod
    def from_config(cls, config: Any) -> "TransactionSettings":
        return cls(config.transaction_max_timeout_ms,
                   config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
                   config.transaction_remove_expired_transaction_cleanup_interval_ms,
                   config.transactional_id_expiration_ms)


class TransactionCoordinator:
    """Coordinator of the transactional ids whose `__transaction_state` partition this
    broker leads."""

    def __init__(self, broker_id: int, settings: TransactionSettings,
                 state: TransactionStateManager, markers: MarkerSender,
                 producer_ids: ProducerIdManager, *, image: Callable[[], MetadataImage],
                 clock: Callable[[], int] = wall_clock_ms) -> None:
        self.broker_id = broker_id
        self.settings = settings
        self.state = state
        self._markers = markers
        self._producer_ids = producer_ids
        self._image = image
        self._clock = clock
        self._nursery: trio.Nursery | None = None
        state._on_loaded = self._on_loaded

    # -- lifecycle -----------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            try:
                await nursery.start(self.state.run, self._image())
                nursery.start_soon(self._every, self.settings.abort_interval_ms,
                                   self.abort_timed_out)
                nursery.start_soon(self._every, self.settings.expire_interval_ms,
                                   self.expire_ids)
                task_status.started()
                await trio.sleep_forever()
            finally:
                self._nursery = None

    async def on_metadata(self, delta: MetadataDelta, image: MetadataImage) -> None:
        self.state.reconcile(image)

    async def _every(self, interval_ms: int, job: Callable[[], Any]) -> None:
        while True:
            await trio.sleep(interval_ms / 1000)
            await job()

    def _on_loaded(self, partition: int, entries: list[TxnEntry]) -> None:
        """A new coordinator finishes what the last one left prepared."""
        for entry in entries:
            if entry.metadata.state in PREPARED:
                self._start_markers(entry.metadata)

    # -- FindCoordinator -----------------------------------------------------------------

    def find_coordinator(self, key: str, listener_name: str) -> CoordinatorLocation:
        return self.state.find_coordinator(self._image(), key, listener_name)

    # -- the client APIs -----------------------------------------------------------------

    async def init_producer_id(self, transactional_id: str, timeout_ms: int,
                               expected: tuple[int, int] | None) -> tuple[int, int, int]:
        """(error, producer id, epoch) for InitProducerId with a transactional id."""
        code = self.state.coordinator_error(transactional_id)
        if code:
            return code, -1, -1
        entry = self.state.entries.get(transactional_id)
        new_id = None
        if decisions.needs_new_producer_id(entry):
            try:
                new_id = await self._producer_ids.generate()
            except ProducerIdsUnavailable as exc:
                logger.warning("cannot hand out a producer id: %s", exc)
                return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, -1, -1
            # The id was being fetched: look again (the entry may have changed meanwhile).
            code = self.state.coordinator_error(transactional_id)
            if code:
                return code, -1, -1
            entry = self.state.entries.get(transactional_id)
        decision = decisions.init_producer_id(
            entry, transactional_id, timeout_ms, self.settings.max_timeout_ms, expected,
            new_id, self._clock())
        if decision.target is not None:
            code = await self.state.write(transactional_id, decision.target, entry)
            if code:
                return code, -1, -1
            if decision.send_markers:
                logger.info("transactional id %s: fencing producer %d epoch %d, aborting its "
                            "ongoing transaction", transactional_id,
                            decision.target.producer_id, decision.target.last_producer_epoch)
                self._start_markers(decision.target)
        if decision.error:
            return decision.error, -1, -1
        current = self.state.entries[transactional_id].metadata
        return ErrorCode.NONE, current.producer_id, current.producer_epoch

    async def add_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                             partitions: Iterable[TopicPartition]) -> int:
        """AddPartitionsToTxn / AddOffsetsToTxn: the error for the whole set."""
        code = self.state.coordinator_error(transactional_id)
        if code:
            return code
        entry = self.state.entries.get(transactional_id)
        decision = decisions.add_partitions(entry, producer_id, epoch, partitions,
                                            self._clock())
        if decision.error or decision.target is None:
            return decision.error
        return await self.state.write(transactional_id, decision.target, entry)

    def verify_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                          partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        code = self.state.coordinator_error(transactional_id)
        if code:
            return {tp: code for tp in partitions}
        return decisions.verify_partitions(self.state.entries.get(transactional_id),
                                           producer_id, epoch, partitions)

    async def end_transaction(self, transactional_id: str, producer_id: int, epoch: int,
                              commit: bool) -> int:
        code = self.state.coordinator_error(transactional_id)
        if code:
            return code
        entry = self.state.entries.get(transactional_id)
        decision = decisions.end_transaction(entry, producer_id, epoch, commit, self._clock())
        if decision.error or decision.target is None:
            return decision.error
        code = await self.state.write(transactional_id, decision.target, entry)
        if code == ErrorCode.NONE and decision.send_markers:
            self._start_markers(decision.target)
        return code

    # -- markers -------------------------------------------------------------------------

    def _start_markers(self, prepared: TxnMetadata) -> None:
        if self._nursery is not None:
            self._nursery.start_soon(self._complete, prepared)

    async def _complete(self, prepared: TxnMetadata) -> None:
        """Send the markers of `prepared`, then write its Complete state; stop when this
        broker stops coordinating the id (the next coordinator finishes the job)."""
        transactional_id = prepared.transactional_id
        partition = self.state.partition_for(transactional_id)
        coordinator_epoch = self.state.coordinator_epoch(partition)
        if coordinator_epoch is None:
            return

        def still_ours() -> bool:
            entry = self.state.entries.get(transactional_id)
            return (self.state.coordinator_epoch(partition) == coordinator_epoch
                    and entry is not None and entry.metadata == prepared)

        with trio.CancelScope() as scope:
            async def watch() -> None:
                while still_ours():
                    await trio.sleep(COMPLETE_RETRY_S)
                scope.cancel()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(watch)
                try:
                    await self._markers.send(prepared.producer_id, prepared.producer_epoch,
                                             prepared.state is TxnState.PREPARE_COMMIT,
                                             coordinator_epoch, prepared.partitions)
                except MarkersFenced as exc:
                    logger.warning("transactional id %s: markers refused, a newer coordinator "
                                   "exists: %s", transactional_id, exc)
                    nursery.cancel_scope.cancel()
                    return
                while still_ours():
                    entry = self.state.entries[transactional_id]
                    if entry.pending is None:
                        target = decisions.complete(prepared, self._clock())
                        if await self.state.write(transactional_id, target, entry) == 0:
                            logger.debug("transactional id %s: %s", transactional_id,
                                         target.state.display_name)
                            break
                    await trio.sleep(COMPLETE_RETRY_S)
                nursery.cancel_scope.cancel()

    # -- periodic jobs -------------------------------------------------------------------

    async def abort_timed_out(self) -> None:
        """Fence and abort every ongoing transaction past its timeout (Kafka's
        abortTimedOutTransactions)."""
        now = self._clock()
        for transactional_id, entry in self.state.loaded_entries():
            current = entry.metadata
            if entry.pending is not None or not decisions.timed_out(current, now):
                continue
            decision = decisions.fence_and_abort(current, now)
            assert decision.target is not None
            logger.info("transactional id %s: aborting the transaction of producer %d epoch "
                        "%d, open longer than its timeout of %d ms", transactional_id,
                        current.producer_id, current.producer_epoch, current.timeout_ms)
            if await self.state.write(transactional_id, decision.target, entry) == 0:
                self._start_markers(decision.target)

    async def expire_ids(self) -> None:
        """Remove transactional ids idle past transactional.id.expiration.ms (tombstones)."""
        now = self._clock()
        for transactional_id, entry in self.state.loaded_entries():
            if entry.pending is None and decisions.expired(
                    entry.metadata, now, self.settings.id_expiration_ms):
                logger.info("transactional id %s expired", transactional_id)
                await self.state.write(transactional_id, None, entry)

    # -- views ---------------------------------------------------------------------------

    def describe(self, transactional_id: str) -> views.Described:
        """One DescribeTransactions entry."""
        code = self.state.coordinator_error(transactional_id)
        entry = None if code else self.state.entries.get(transactional_id)
        return views.describe(transactional_id, entry, code)

    def list_transactions(self, states: list[str], producer_ids: list[int],
                          duration_ms: int) -> tuple[list[str], list[views.Listed]]:
        """(unknown state filters, ListTransactions entries)."""
        return views.list_transactions(self.state.loaded_entries(), states, producer_ids,
                                       duration_ms, self._clock())
