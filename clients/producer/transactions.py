"""The transactional producer's state machine (pure), as Kafka's TransactionManager.

States follow Kafka's: UNINITIALIZED -> INITIALIZING -> READY -> IN_TRANSACTION ->
COMMITTING_TRANSACTION / ABORTING_TRANSACTION -> READY. An abortable error (a failed send,
a refused partition) moves to ABORTABLE_ERROR, from which only ``abort_transaction`` leads
back to READY; a fatal one (PRODUCER_FENCED, an authorization failure) to FATAL_ERROR, after
which the producer can only be closed.
"""

from __future__ import annotations

import enum

from clients.common.cluster import BrokerNode
from clients.consumer.group_metadata import ConsumerGroupMetadata
from clients.producer.idempotence import IdempotenceState
from clients.protocol import ErrorCode, KafkaError

TopicPartition = tuple[str, int]

__all__ = ["ConsumerGroupMetadata", "TransactionManager", "ProducerTxnState"]


class ProducerTxnState(enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


class TransactionAbortedError(KafkaError):
    """The record was not sent: its transaction was aborted first."""

    def __init__(self, message: str = "the transaction was aborted before the record "
                                      "was sent") -> None:
        super().__init__(ErrorCode.TRANSACTION_ABORTABLE, message)


class TransactionStateError(RuntimeError):
    """A transactional method called in a state that does not allow it (Kafka's
    IllegalStateException), e.g. ``send`` before ``begin_transaction``."""


# Errors after which the producer cannot go on (Kafka's fatal errors).
FATAL_ERRORS = frozenset({
    ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH,
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ErrorCode.INVALID_TXN_STATE, ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
    ErrorCode.UNSUPPORTED_VERSION, ErrorCode.INVALID_PRODUCER_ID_MAPPING,
    ErrorCode.INVALID_TRANSACTION_TIMEOUT,
})
# Errors after which the coordinator is looked up again.
COORDINATOR_ERRORS = frozenset({ErrorCode.NOT_COORDINATOR,
                                ErrorCode.COORDINATOR_NOT_AVAILABLE})
# Errors a request is simply retried after.
RETRY_ERRORS = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                          ErrorCode.CONCURRENT_TRANSACTIONS,
                          ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.REQUEST_TIMED_OUT,
                          ErrorCode.NETWORK_EXCEPTION})


def fenced(code: ErrorCode, message: str | None = None) -> KafkaError:
    """INVALID_PRODUCER_EPOCH is reported as PRODUCER_FENCED, as Kafka's producer does."""
    if code == ErrorCode.INVALID_PRODUCER_EPOCH:
        code = ErrorCode.PRODUCER_FENCED
    return KafkaError(code, message or (
        "there is a newer producer with the same transactional.id: this one is fenced"
        if code == ErrorCode.PRODUCER_FENCED else None))


class TransactionManager:
    """Transaction state of one transactional producer; the drivers run its requests."""

    def __init__(self, transactional_id: str, timeout_ms: int,
                 idempotence: IdempotenceState) -> None:
        self.transactional_id = transactional_id
        self.timeout_ms = timeout_ms
        self.idempotence = idempotence
        self.state = ProducerTxnState.UNINITIALIZED
        self.error: KafkaError | None = None
        self.coordinator: BrokerNode | None = None
        self.partitions: set[TopicPartition] = set()       # added to the transaction
        self.pending: set[TopicPartition] = set()          # to add before their batches go
        self.offsets_added = False                         # AddOffsetsToTxn done
        # KIP-360: after a sequence error the next InitProducerId bumps the epoch.
        self.epoch_bump_needed = False

    # ---- transitions asked for by the application ----

    def _check(self, *allowed: ProducerTxnState, action: str) -> None:
        if self.state == ProducerTxnState.FATAL_ERROR:
            assert self.error is not None
            raise self.error
        if self.state in allowed:
            return
        if self.state == ProducerTxnState.ABORTABLE_ERROR and self.error is not None:
            raise KafkaError(self.error.code, f"cannot {action}: the transaction must be "
                             f"aborted after an earlier error: {self.error.message}")
        raise TransactionStateError(f"cannot {action} in state {self.state.value}")

    def start_init(self) -> None:
        self._check(ProducerTxnState.UNINITIALIZED, ProducerTxnState.INITIALIZING,
                    action="init_transactions")
        self.state = ProducerTxnState.INITIALIZING

    def begin(self) -> None:
        self._check(ProducerTxnState.READY, action="begin_transaction")
        self.state = ProducerTxnState.IN_TRANSACTION

    def check_send(self) -> None:
        """A record may be sent only inside a transaction (an aborted one refuses it)."""
        self._check(ProducerTxnState.IN_TRANSACTION, action="send")

    def check_offsets(self) -> None:
        self._check(ProducerTxnState.IN_TRANSACTION, action="send_offsets_to_transaction")

    def start_commit(self) -> None:
        self._check(ProducerTxnState.IN_TRANSACTION, ProducerTxnState.COMMITTING_TRANSACTION,
                    action="commit_transaction")
        self.state = ProducerTxnState.COMMITTING_TRANSACTION

    def start_abort(self) -> None:
        self._check(ProducerTxnState.IN_TRANSACTION, ProducerTxnState.ABORTABLE_ERROR,
                    ProducerTxnState.ABORTING_TRANSACTION, action="abort_transaction")
        self.state = ProducerTxnState.ABORTING_TRANSACTION

    # ---- what the sender sees ----

    def add_partition(self, tp: TopicPartition) -> None:
        if tp not in self.partitions:
            self.pending.add(tp)

    def held(self, tp: TopicPartition) -> bool:
        """Batches wait until their partition is part of the transaction."""
        return tp not in self.partitions

    @property
    def in_error(self) -> bool:
        return self.state in (ProducerTxnState.ABORTABLE_ERROR, ProducerTxnState.FATAL_ERROR)

    def batch_failed(self, error: BaseException, had_sequence: bool = True) -> None:
        """A batch of the transaction failed for good: the transaction must be aborted, and
        when the batch had a sequence (a gap now) the epoch bumped after the abort."""
        if had_sequence:
            self.epoch_bump_needed = True
        if not isinstance(error, KafkaError):
            error = KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, str(error))
        if error.code in FATAL_ERRORS or self.state in (ProducerTxnState.IN_TRANSACTION,
                                                        ProducerTxnState.COMMITTING_TRANSACTION):
            self.fail(error)

    def fail(self, error: KafkaError) -> KafkaError:
        """Record an error: fatal codes end the producer; others make the transaction
        abortable. Returns the error to raise."""
        if error.code in FATAL_ERRORS:
            error = fenced(error.code, error.message) \
                if error.code == ErrorCode.INVALID_PRODUCER_EPOCH else error
            self.state, self.error = ProducerTxnState.FATAL_ERROR, error
        elif self.state != ProducerTxnState.FATAL_ERROR:
            if error.code in (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                              ErrorCode.UNKNOWN_PRODUCER_ID):
                self.epoch_bump_needed = True
            if self.state not in (ProducerTxnState.UNINITIALIZED, ProducerTxnState.INITIALIZING,
                                  ProducerTxnState.READY):
                self.state, self.error = ProducerTxnState.ABORTABLE_ERROR, error
        return error

    # ---- completions ----

    def initialized(self, producer_id: int, epoch: int) -> None:
        self.idempotence.set_identity(producer_id, epoch)
        self.epoch_bump_needed = False
        self.state, self.error = ProducerTxnState.READY, None

    def added(self, partitions: set[TopicPartition]) -> None:
        self.partitions |= partitions
        self.pending -= partitions

    def completed(self) -> None:
        """EndTxn succeeded: the next transaction may begin."""
        self.partitions.clear()
        self.pending.clear()
        self.offsets_added = False
        self.state, self.error = ProducerTxnState.READY, None
