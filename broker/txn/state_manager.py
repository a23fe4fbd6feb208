"""The `__transaction_state` partitions this broker leads (Kafka's TransactionStateManager):
loading them when leadership arrives, dropping them when it leaves, and writing each
transition (acks=all) before it becomes the current state.
"""

from __future__ import annotations

import logging
from typing import Callable, Iterator

import trio

from broker.coordinator.partitions import led_partitions
from broker.coordinator.log import CoordinatorLog, CoordinatorLogError
from broker.txn.metadata import TxnEntry, TxnMetadata, TxnState
from broker.txn.records import build_batch, iter_states
from broker.txn.state_topic import (
    TRANSACTION_STATE_TOPIC,
    partition_for_transactional_id,
)
from clients.protocol import ErrorCode
from clients.records.errors import RecordsError
from metadata.image import MetadataImage

logger = logging.getLogger(__name__)

LOAD_RETRY_S = 0.1
LOAD_MAX_RETRY_S = 2.0


def write_error(code: int) -> int:
    """The client's error for a failed state write (Kafka's appendTransactionToLog mapping)."""
    if code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR,
                ErrorCode.NOT_COORDINATOR):
        return ErrorCode.NOT_COORDINATOR
    return ErrorCode.UNKNOWN_SERVER_ERROR if code else ErrorCode.NONE


class TransactionStateManager:
    """Transactional ids of the led partitions, by id; `coordinator_epoch(p)` is the
    partition's leader epoch, which markers carry."""

    def __init__(self, broker_id: int, num_partitions: int, log: CoordinatorLog,
                 clock: Callable[[], int],
                 on_loaded: Callable[[int, list[TxnEntry]], None] | None = None,
                 caught_up: Callable[[], bool] = lambda: True) -> None:
        self.broker_id = broker_id
        self._caught_up = caught_up
        self.num_partitions = num_partitions
        self._log = log
        self._clock = clock
        self._on_loaded = on_loaded
        self.entries: dict[str, TxnEntry] = {}
        self._loaded: dict[int, int] = {}
        self._loading: dict[int, int] = {}
        self._nursery: trio.Nursery | None = None

    def partition_for(self, transactional_id: str) -> int:
        return partition_for_transactional_id(transactional_id, self.num_partitions)

    # -- ownership -----------------------------------------------------------------------

    def coordinator_error(self, transactional_id: str) -> int:
        partition = self.partition_for(transactional_id)
        if partition in self._loaded:
            return ErrorCode.NONE
        if partition in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NOT_COORDINATOR

    def coordinator_epoch(self, partition: int) -> int | None:
        return self._loaded.get(partition)

    def loaded_entries(self) -> Iterator[tuple[str, TxnEntry]]:
        return iter(list(self.entries.items()))

    # -- loading -------------------------------------------------------------------------

    async def run(self, image: MetadataImage, *,
                  task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self.reconcile(image)
                task_status.started()
                await trio.sleep_forever()
        finally:
            self._nursery = None
            for partition in [*self._loaded, *self._loading]:
                self._unload(partition)

    def reconcile(self, image: MetadataImage) -> None:
        """Load the partitions this broker now leads; drop the ones it stopped leading."""
        led = led_partitions(image, TRANSACTION_STATE_TOPIC, self.broker_id,
                             self._caught_up())
        for partition, epoch in [*self._loaded.items(), *self._loading.items()]:
            if led.get(partition) != epoch:
                self._unload(partition)
        if self._nursery is None:
            return
        for partition, epoch in led.items():
            if partition not in self._loaded and partition not in self._loading:
                self._loading[partition] = epoch
                self._nursery.start_soon(self._load, partition, epoch)

    async def _load(self, partition: int, epoch: int) -> None:
        attempt = 0
        while self._loading.get(partition) == epoch:
            try:
                states = await self._read(partition, epoch)
            except (CoordinatorLogError, RecordsError) as exc:
                logger.debug("%s-%d: load attempt %d failed: %s", TRANSACTION_STATE_TOPIC,
                             partition, attempt + 1, exc)
                await trio.sleep(min(LOAD_RETRY_S * 2 ** attempt, LOAD_MAX_RETRY_S))
                attempt += 1
                continue
            if states is None or self._loading.get(partition) != epoch:
                return
            del self._loading[partition]
            self._loaded[partition] = epoch
            loaded = []
            for transactional_id, metadata in states.items():
                entry = TxnEntry(metadata)
                self.entries[transactional_id] = entry
                loaded.append(entry)
            logger.info("%s-%d loaded at epoch %d: %d transactional id(s)",
                        TRANSACTION_STATE_TOPIC, partition, epoch, len(loaded))
            if self._on_loaded is not None:
                self._on_loaded(partition, loaded)
            return

    async def _read(self, partition: int, epoch: int) -> dict[str, TxnMetadata] | None:
        states: dict[str, TxnMetadata] = {}

        def unreadable(offset: int, error: Exception) -> None:
            logger.error("%s-%d: skipping the unreadable record at offset %d: %s",
                         TRANSACTION_STATE_TOPIC, partition, offset, error)

        for chunk in self._log.read_from(partition, self._log.log_start_offset(partition)):
            for transactional_id, metadata in iter_states(chunk, unreadable):
                if metadata is None or metadata.state is TxnState.DEAD:
                    states.pop(transactional_id, None)
                else:
                    states[transactional_id] = metadata
            await trio.sleep(0)
            if self._loading.get(partition) != epoch:
                return None
        return states

    def _unload(self, partition: int) -> None:
        self._loading.pop(partition, None)
        if self._loaded.pop(partition, None) is None:
            return
        for transactional_id in [t for t in self.entries if self.partition_for(t) == partition]:
            del self.entries[transactional_id]
        logger.info("%s-%d unloaded", TRANSACTION_STATE_TOPIC, partition)

    # -- writes --------------------------------------------------------------------------

    async def write(self, transactional_id: str, target: TxnMetadata | None,
                    entry: TxnEntry | None = None) -> int:
        """Write `target` (None: a tombstone) for `transactional_id` and, once it is
        committed, make it current. Returns the client's error (NONE when written)."""
        partition = self.partition_for(transactional_id)
        epoch = self._loaded.get(partition)
        if epoch is None:
            return self.coordinator_error(transactional_id)
        if entry is None:
            entry = self.entries.get(transactional_id)
        new = entry is None
        if entry is None:
            assert target is not None
            entry = TxnEntry(target)
            self.entries[transactional_id] = entry
        entry.pending = TxnState.DEAD if target is None else target.state
        try:
            await self._log.append(partition, build_batch(transactional_id, target,
                                                          self._clock()))
            code = ErrorCode.NONE
        except CoordinatorLogError as exc:
            logger.warning("%s-%d: writing the state of %s failed: %s", TRANSACTION_STATE_TOPIC,
                           partition, transactional_id, exc)
            code = write_error(exc.error_code)
        finally:
            entry.pending = None
        if self._loaded.get(partition) != epoch:
            return ErrorCode.NOT_COORDINATOR
        if code:
            if new:
                self.entries.pop(transactional_id, None)
            return code
        if target is None:
            self.entries.pop(transactional_id, None)
        else:
            entry.metadata = target
        return ErrorCode.NONE
