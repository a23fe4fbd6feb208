"""A transactional id's state, as Kafka's TransactionMetadata keeps it. Pure."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
# An epoch this high is not bumped further: the producer gets a new id at epoch 0.
MAX_PRODUCER_EPOCH = 32767

TopicPartition = tuple[str, int]


class TxnState(enum.Enum):
    """Kafka's transaction states; `value` is the state byte of `__transaction_state`."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def display_name(self) -> str:
        """The name DescribeTransactions and ListTransactions report."""
        return _NAMES[self]

    @classmethod
    def from_name(cls, name: str) -> "TxnState | None":
        return _BY_NAME.get(name)


_NAMES = {
    TxnState.EMPTY: "Empty", TxnState.ONGOING: "Ongoing",
    TxnState.PREPARE_COMMIT: "PrepareCommit", TxnState.PREPARE_ABORT: "PrepareAbort",
    TxnState.COMPLETE_COMMIT: "CompleteCommit", TxnState.COMPLETE_ABORT: "CompleteAbort",
    TxnState.DEAD: "Dead", TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_NAME = {name: state for state, name in _NAMES.items()}

# Kafka's TransactionState.validPreviousStates.
VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    TxnState.EMPTY: frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT,
                               TxnState.COMPLETE_ABORT}),
    TxnState.ONGOING: frozenset({TxnState.ONGOING, TxnState.EMPTY, TxnState.COMPLETE_COMMIT,
                                 TxnState.COMPLETE_ABORT}),
    TxnState.PREPARE_COMMIT: frozenset({TxnState.ONGOING}),
    TxnState.PREPARE_ABORT: frozenset({TxnState.ONGOING, TxnState.PREPARE_EPOCH_FENCE}),
    TxnState.COMPLETE_COMMIT: frozenset({TxnState.PREPARE_COMMIT}),
    TxnState.COMPLETE_ABORT: frozenset({TxnState.PREPARE_ABORT}),
    TxnState.DEAD: frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT,
                              TxnState.COMPLETE_ABORT}),
    TxnState.PREPARE_EPOCH_FENCE: frozenset({TxnState.ONGOING}),
}

PREPARED = frozenset({TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT})
COMPLETED = frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT})


class IllegalTransition(RuntimeError):
    """A transition Kafka's state machine does not allow."""


@dataclass(frozen=True)
class TxnMetadata:
    """One transactional id's state. Immutable: a transition makes a new value, which
    becomes current only once `__transaction_state` holds it."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition] = frozenset()
    start_ms: int = -1
    last_update_ms: int = -1
    # The epoch before the last bump (KIP-360: a producer retrying InitProducerId after a
    # lost answer names it). Not stored in the log, as in Kafka.
    last_producer_epoch: int = NO_PRODUCER_EPOCH

    def transition(self, state: TxnState, now_ms: int, **changes: object) -> "TxnMetadata":
        """The metadata after moving to `state` (with `changes`); IllegalTransition if
        Kafka's state machine forbids it."""
        if self.state not in VALID_PREVIOUS[state]:
            raise IllegalTransition(f"transactional id {self.transactional_id}: "
                                    f"{self.state.display_name} -> {state.display_name}")
        return replace(self, state=state, last_update_ms=now_ms, **changes)  # type: ignore[arg-type]

    @property
    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_PRODUCER_EPOCH - 1


@dataclass
class TxnEntry:
    """The coordinator's slot for one transactional id: the stored metadata and whether a
    transition is being written (a second one meanwhile gets CONCURRENT_TRANSACTIONS)."""

    metadata: TxnMetadata
    pending: TxnState | None = None
