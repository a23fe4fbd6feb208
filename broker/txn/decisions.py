"""The coordinator's decisions, as Kafka's TransactionCoordinator takes them: given a
transactional id's stored state and a request, the error to answer or the transition to
write. Pure: no clock, no log, no network.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from broker.txn.metadata import (
    NO_PRODUCER_EPOCH,
    TopicPartition,
    TxnEntry,
    TxnMetadata,
    TxnState,
)
from clients.protocol import ErrorCode


@dataclass(frozen=True)
class Decision:
    """What to answer (`error`) and what to write first (`target`, None: nothing); with
    `send_markers`, the written target is a prepared transaction whose markers go out."""

    error: int = ErrorCode.NONE
    target: TxnMetadata | None = None
    send_markers: bool = False


def refuse(code: int) -> Decision:
    return Decision(error=int(code))


def init_producer_id(entry: TxnEntry | None, transactional_id: str, timeout_ms: int,
                     max_timeout_ms: int, expected: tuple[int, int] | None,
                     new_producer_id: int | None, now_ms: int) -> Decision:
    """InitProducerId for a transactional id (Kafka's prepareInitProducerIdTransit).

    `new_producer_id` is a fresh id the caller obtained in case one is needed (a new
    transactional id, or an exhausted epoch). An ongoing transaction is fenced: the epoch is
    bumped and the transaction aborted (send_markers), and the producer asked to retry.
    """
    if timeout_ms <= 0 or timeout_ms > max_timeout_ms:
        return refuse(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
    if entry is None:
        assert new_producer_id is not None
        return Decision(target=TxnMetadata(transactional_id, new_producer_id, 0, timeout_ms,
                                           TxnState.EMPTY, last_update_ms=now_ms))
    if entry.pending is not None:
        return refuse(ErrorCode.CONCURRENT_TRANSACTIONS)
    current = entry.metadata
    if expected is not None and not _is_valid_expected(current, expected):
        return refuse(ErrorCode.PRODUCER_FENCED)
    state = current.state
    if state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
        return refuse(ErrorCode.CONCURRENT_TRANSACTIONS)
    if state is TxnState.ONGOING:
        return fence_and_abort(current, now_ms)
    if state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
        if (expected is not None and current.last_producer_epoch != NO_PRODUCER_EPOCH
                and expected == (current.producer_id, current.last_producer_epoch)):
            # KIP-360: a retry of the bump already written (its answer was lost).
            return Decision()
        if current.epoch_exhausted:
            assert new_producer_id is not None
            target = current.transition(TxnState.EMPTY, now_ms, producer_id=new_producer_id,
                                        producer_epoch=0, timeout_ms=timeout_ms,
                                        partitions=frozenset(), start_ms=-1,
                                        last_producer_epoch=NO_PRODUCER_EPOCH)
        else:
            target = current.transition(TxnState.EMPTY, now_ms,
                                        producer_epoch=current.producer_epoch + 1,
                                        timeout_ms=timeout_ms, partitions=frozenset(),
                                        start_ms=-1,
                                        last_producer_epoch=current.producer_epoch)
        return Decision(target=target)
    return refuse(ErrorCode.INVALID_TXN_STATE)


def needs_new_producer_id(entry: TxnEntry | None) -> bool:
    """Whether InitProducerId may need a fresh producer id for this entry."""
    return entry is None or entry.metadata.epoch_exhausted


def _is_valid_expected(current: TxnMetadata, expected: tuple[int, int]) -> bool:
    """KIP-360: the producer names the id and epoch it has; valid when they are current, or
    the epoch just before the last bump (its answer was lost)."""
    producer_id, epoch = expected
    if producer_id != current.producer_id:
        return False
    return epoch in (current.producer_epoch, current.last_producer_epoch)


def fence_and_abort(current: TxnMetadata, now_ms: int) -> Decision:
    """Bump the epoch of an ongoing transaction and abort it (Kafka's PrepareEpochFence
    followed by PrepareAbort): the old producer is fenced, the markers carry the new epoch."""
    fenced = current.transition(TxnState.PREPARE_EPOCH_FENCE, now_ms)
    bumped_epoch = current.producer_epoch + (0 if current.epoch_exhausted else 1)
    target = fenced.transition(TxnState.PREPARE_ABORT, now_ms, producer_epoch=bumped_epoch,
                               last_producer_epoch=current.producer_epoch)
    return Decision(error=ErrorCode.CONCURRENT_TRANSACTIONS, target=target, send_markers=True)


def _check_producer(entry: TxnEntry | None, producer_id: int, epoch: int) -> int:
    if entry is None:
        return ErrorCode.INVALID_PRODUCER_ID_MAPPING
    current = entry.metadata
    if current.producer_id != producer_id:
        return ErrorCode.INVALID_PRODUCER_ID_MAPPING
    if current.producer_epoch != epoch:
        return ErrorCode.PRODUCER_FENCED
    if entry.pending is not None:
        return ErrorCode.CONCURRENT_TRANSACTIONS
    return ErrorCode.NONE


def add_partitions(entry: TxnEntry | None, producer_id: int, epoch: int,
                   partitions: Iterable[TopicPartition], now_ms: int) -> Decision:
    """AddPartitionsToTxn / AddOffsetsToTxn: the transaction becomes (or stays) Ongoing with
    `partitions` in it; nothing to write when they all are already."""
    code = _check_producer(entry, producer_id, epoch)
    if code:
        return refuse(code)
    assert entry is not None
    current = entry.metadata
    if current.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
        return refuse(ErrorCode.CONCURRENT_TRANSACTIONS)
    if current.state not in (TxnState.EMPTY, TxnState.ONGOING, TxnState.COMPLETE_COMMIT,
                             TxnState.COMPLETE_ABORT):
        return refuse(ErrorCode.INVALID_TXN_STATE)
    wanted = frozenset(partitions)
    if current.state is TxnState.ONGOING and wanted <= current.partitions:
        return Decision()
    if current.state is TxnState.ONGOING:
        return Decision(target=current.transition(TxnState.ONGOING, now_ms,
                                                  partitions=current.partitions | wanted))
    return Decision(target=current.transition(TxnState.ONGOING, now_ms, partitions=wanted,
                                              start_ms=now_ms))


def verify_partitions(entry: TxnEntry | None, producer_id: int, epoch: int,
                      partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
    """AddPartitionsToTxn verify_only (KIP-890): per partition, NONE when it is in the
    ongoing transaction, else INVALID_TXN_STATE (or the producer's error for all)."""
    wanted = list(partitions)
    code = _check_producer(entry, producer_id, epoch)
    if code:
        return {tp: code for tp in wanted}
    assert entry is not None
    current = entry.metadata
    ongoing = current.state is TxnState.ONGOING
    return {tp: ErrorCode.NONE if ongoing and tp in current.partitions
            else ErrorCode.INVALID_TXN_STATE for tp in wanted}


def end_transaction(entry: TxnEntry | None, producer_id: int, epoch: int, commit: bool,
                    now_ms: int) -> Decision:
    """EndTxn (Kafka's endTransaction): Ongoing moves to PrepareCommit/PrepareAbort and the
    markers go out; a retry of a finished end is answered NONE."""
    if entry is None:
        return refuse(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    current = entry.metadata
    if current.producer_id != producer_id:
        return refuse(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    if epoch != current.producer_epoch:
        return refuse(ErrorCode.PRODUCER_FENCED)
    if entry.pending is not None:
        return refuse(ErrorCode.CONCURRENT_TRANSACTIONS)
    state = current.state
    if state is TxnState.ONGOING:
        target = current.transition(
            TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT, now_ms)
        return Decision(target=target, send_markers=True)
    if state is TxnState.COMPLETE_COMMIT:
        return Decision() if commit else refuse(ErrorCode.INVALID_TXN_STATE)
    if state is TxnState.COMPLETE_ABORT:
        return refuse(ErrorCode.INVALID_TXN_STATE) if commit else Decision()
    if state is TxnState.PREPARE_COMMIT:
        return refuse(ErrorCode.CONCURRENT_TRANSACTIONS if commit
                      else ErrorCode.INVALID_TXN_STATE)
    if state is TxnState.PREPARE_ABORT:
        return refuse(ErrorCode.INVALID_TXN_STATE if commit
                      else ErrorCode.CONCURRENT_TRANSACTIONS)
    return refuse(ErrorCode.INVALID_TXN_STATE)


def complete(current: TxnMetadata, now_ms: int) -> TxnMetadata:
    """The Complete state after every marker of a prepared transaction is written."""
    state = (TxnState.COMPLETE_COMMIT if current.state is TxnState.PREPARE_COMMIT
             else TxnState.COMPLETE_ABORT)
    return current.transition(state, now_ms, partitions=frozenset())


def timed_out(current: TxnMetadata, now_ms: int) -> bool:
    """An Ongoing transaction past its transaction.timeout.ms."""
    return (current.state is TxnState.ONGOING and current.start_ms >= 0
            and current.start_ms + current.timeout_ms < now_ms)


def expired(current: TxnMetadata, now_ms: int, expiration_ms: int) -> bool:
    """An idle transactional id past transactional.id.expiration.ms."""
    return (current.state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT,
                              TxnState.COMPLETE_ABORT)
            and current.last_update_ms + expiration_ms <= now_ms)
