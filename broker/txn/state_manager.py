"""The `__transaction_state` partitions this broker leads (Kafka's TransactionStateManager):
the transactional ids the coordinator runtime loads when leadership arrives and drops when it
leaves, and each transition written (acks=all) before it becomes the current state.

Writes of one partition are not queued behind each other as the group coordinator's are:
each is appended in its caller's task, so they reach the log in the order they were decided
(an append lands in the log before it waits for replication) and wait for replication
together. An id's `pending` mark lets marker completion and the periodic jobs leave it alone
while a write of it is in flight.
"""

from __future__ import annotations

import logging
from typing import Callable, Iterator

import trio

from broker.coordinator.loader import LoadSettings, Unreadable
from broker.coordinator.log import CoordinatorLog, CoordinatorLogError
from broker.coordinator.partitions import CoordinatorLocation
from broker.coordinator.runtime import CoordinatorRuntime
from broker.coordinator.topic import InternalTopicCreator
from broker.txn.metadata import TxnEntry, TxnMetadata, TxnState
from broker.txn.records import build_batch, iter_states
from broker.txn.state_topic import (
    TRANSACTION_STATE_TOPIC,
    partition_for_transactional_id,
)
from clients.protocol import ErrorCode
from metadata.image import MetadataImage

logger = logging.getLogger(__name__)

# A partition that cannot be read is retried for as long as this broker leads it; its
# transactional producers hear COORDINATOR_LOAD_IN_PROGRESS meanwhile, and retry.
LOAD_SETTINGS = LoadSettings(attempts=None)


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
                 caught_up: Callable[[], bool] = lambda: True,
                 topic_creator: InternalTopicCreator | None = None) -> None:
        self.broker_id = broker_id
        self.num_partitions = num_partitions
        self._log = log
        self._clock = clock
        self._on_loaded = on_loaded
        self.entries: dict[str, TxnEntry] = {}
        self.runtime: CoordinatorRuntime[None] = CoordinatorRuntime(
            broker_id, TRANSACTION_STATE_TOPIC, log, self, creator=topic_creator,
            load_settings=LOAD_SETTINGS, caught_up=caught_up, clock=clock)

    def partition_for(self, transactional_id: str) -> int:
        return partition_for_transactional_id(transactional_id, self.num_partitions)

    # -- ownership -----------------------------------------------------------------------

    def coordinator_error(self, transactional_id: str) -> int:
        return self.runtime.error(self.partition_for(transactional_id))

    def coordinator_epoch(self, partition: int) -> int | None:
        return self.runtime.epoch(partition)

    def loaded_entries(self) -> Iterator[tuple[str, TxnEntry]]:
        return iter(list(self.entries.items()))

    def find_coordinator(self, image: MetadataImage, transactional_id: str,
                         listener_name: str) -> CoordinatorLocation:
        return self.runtime.find_coordinator(image, self.partition_for(transactional_id),
                                             listener_name)

    # -- loading -------------------------------------------------------------------------

    async def run(self, image: MetadataImage, *,
                  task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await self.runtime.run(image, task_status=task_status)

    def reconcile(self, image: MetadataImage) -> None:
        """Load the partitions this broker now leads; drop the ones it stopped leading."""
        self.runtime.reconcile(image)

    # -- the state machine the runtime loads (CoordinatorStateMachine) --------------------

    def decode(self, chunk: bytes, unreadable: Unreadable
               ) -> Iterator[tuple[str, TxnMetadata | None]]:
        return iter_states(chunk, unreadable)

    def new_replay(self, partition: int) -> "StateReplay":
        return StateReplay()

    def install(self, partition: int, epoch: int, replay: "StateReplay") -> str:
        loaded = []
        for transactional_id, metadata in replay.states.items():
            entry = TxnEntry(metadata)
            self.entries[transactional_id] = entry
            loaded.append(entry)
        if self._on_loaded is not None:
            self._on_loaded(partition, loaded)
        return f"{len(loaded)} transactional id(s)"

    def unload(self, partition: int, loaded: bool) -> None:
        if loaded:
            for transactional_id in [t for t in self.entries
                                     if self.partition_for(t) == partition]:
                del self.entries[transactional_id]

    # -- writes --------------------------------------------------------------------------

    async def write(self, transactional_id: str, target: TxnMetadata | None,
                    entry: TxnEntry | None = None) -> int:
        """Write `target` (None: a tombstone) for `transactional_id` and, once it is
        committed, make it current. Returns the client's error (NONE when written)."""
        partition = self.partition_for(transactional_id)
        epoch = self.runtime.epoch(partition)
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
        if self.runtime.epoch(partition) != epoch:
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


class StateReplay:
    """A partition's transactional ids replayed in log order: the latest state of each, a
    tombstone or a Dead state removing it."""

    def __init__(self) -> None:
        self.states: dict[str, TxnMetadata] = {}

    def apply(self, records: list[tuple[str, TxnMetadata | None]]) -> None:
        for transactional_id, metadata in records:
            if metadata is None or metadata.state is TxnState.DEAD:
                self.states.pop(transactional_id, None)
            else:
                self.states[transactional_id] = metadata
