"""The coordinator's state machine and decisions (pure), as Kafka's TransactionCoordinator
takes them."""

from __future__ import annotations

import pytest

from broker.txn import decisions
from broker.txn.metadata import (
    MAX_PRODUCER_EPOCH,
    IllegalTransition,
    TxnEntry,
    TxnMetadata,
    TxnState,
)
from broker.txn.state_topic import partition_for_transactional_id
from clients.protocol import ErrorCode

MAX_TIMEOUT = 900_000
TP = ("out", 0)


def entry(state: TxnState = TxnState.EMPTY, epoch: int = 0, **changes) -> TxnEntry:
    return TxnEntry(TxnMetadata("t", 100, epoch, 60_000, state, **changes))


def init(e: TxnEntry | None, timeout: int = 60_000, expected=None, new_id=None):
    return decisions.init_producer_id(e, "t", timeout, MAX_TIMEOUT, expected, new_id, 1000)


def test_a_new_transactional_id_gets_the_fresh_producer_id_at_epoch_0():
    decision = init(None, new_id=7)
    assert decision.error == 0
    assert (decision.target.producer_id, decision.target.producer_epoch,
            decision.target.state) == (7, 0, TxnState.EMPTY)


@pytest.mark.parametrize("timeout", [0, -1, MAX_TIMEOUT + 1])
def test_a_timeout_outside_the_bounds_is_refused(timeout):
    assert init(None, timeout=timeout, new_id=1).error == ErrorCode.INVALID_TRANSACTION_TIMEOUT


@pytest.mark.parametrize("state", [TxnState.EMPTY, TxnState.COMPLETE_COMMIT,
                                   TxnState.COMPLETE_ABORT])
def test_init_of_a_known_id_bumps_the_epoch(state):
    decision = init(entry(state, epoch=4))
    assert decision.error == 0
    assert (decision.target.producer_id, decision.target.producer_epoch) == (100, 5)
    assert decision.target.state is TxnState.EMPTY
    assert decision.target.last_producer_epoch == 4


def test_an_exhausted_epoch_gets_a_new_producer_id():
    decision = init(entry(epoch=MAX_PRODUCER_EPOCH - 1), new_id=200)
    assert (decision.target.producer_id, decision.target.producer_epoch) == (200, 0)
    assert decisions.needs_new_producer_id(entry(epoch=MAX_PRODUCER_EPOCH - 1))
    assert not decisions.needs_new_producer_id(entry(epoch=3))


def test_init_during_an_ongoing_transaction_fences_and_aborts_it():
    decision = init(entry(TxnState.ONGOING, epoch=2, partitions=frozenset({TP})))
    assert decision.error == ErrorCode.CONCURRENT_TRANSACTIONS
    assert decision.send_markers
    assert decision.target.state is TxnState.PREPARE_ABORT
    assert decision.target.producer_epoch == 3  # the markers carry the fencing epoch
    assert decision.target.partitions == frozenset({TP})


@pytest.mark.parametrize("state", [TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT])
def test_init_while_markers_are_written_asks_to_retry(state):
    assert init(entry(state)).error == ErrorCode.CONCURRENT_TRANSACTIONS


def test_a_pending_write_makes_everything_concurrent():
    e = entry(TxnState.ONGOING)
    e.pending = TxnState.PREPARE_COMMIT
    assert init(e).error == ErrorCode.CONCURRENT_TRANSACTIONS
    assert decisions.add_partitions(e, 100, 0, [TP], 1).error == ErrorCode.CONCURRENT_TRANSACTIONS
    assert decisions.end_transaction(e, 100, 0, True, 1).error == ErrorCode.CONCURRENT_TRANSACTIONS


def test_kip_360_recovery_with_the_current_or_retried_epoch():
    current = entry(epoch=5, last_producer_epoch=4)
    # The producer names its current epoch: bumped.
    assert init(current, expected=(100, 5)).target.producer_epoch == 6
    # It retries a bump whose answer it lost: the same epoch again, nothing written.
    retried = init(current, expected=(100, 4))
    assert (retried.error, retried.target) == (0, None)
    # Another producer id or an unknown epoch: fenced.
    assert init(current, expected=(99, 5)).error == ErrorCode.PRODUCER_FENCED
    assert init(current, expected=(100, 2)).error == ErrorCode.PRODUCER_FENCED


def test_add_partitions_starts_and_extends_the_transaction():
    started = decisions.add_partitions(entry(), 100, 0, [TP], 1234)
    assert started.target.state is TxnState.ONGOING
    assert started.target.start_ms == 1234
    ongoing = TxnEntry(started.target)
    assert decisions.add_partitions(ongoing, 100, 0, [TP], 2000) == decisions.Decision()
    grown = decisions.add_partitions(ongoing, 100, 0, [("out", 1)], 2000).target
    assert grown.partitions == {TP, ("out", 1)} and grown.start_ms == 1234


def test_add_partitions_checks_the_producer():
    assert decisions.add_partitions(None, 100, 0, [TP], 1).error == \
        ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert decisions.add_partitions(entry(), 101, 0, [TP], 1).error == \
        ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert decisions.add_partitions(entry(epoch=3), 100, 2, [TP], 1).error == \
        ErrorCode.PRODUCER_FENCED
    assert decisions.add_partitions(entry(TxnState.PREPARE_COMMIT), 100, 0, [TP], 1).error == \
        ErrorCode.CONCURRENT_TRANSACTIONS


def test_verify_only_answers_per_partition():
    e = entry(TxnState.ONGOING, partitions=frozenset({TP}))
    assert decisions.verify_partitions(e, 100, 0, [TP, ("out", 1)]) == {
        TP: 0, ("out", 1): ErrorCode.INVALID_TXN_STATE}
    assert decisions.verify_partitions(e, 100, 1, [TP]) == {TP: ErrorCode.PRODUCER_FENCED}
    assert decisions.verify_partitions(entry(), 100, 0, [TP]) == {TP: ErrorCode.INVALID_TXN_STATE}


@pytest.mark.parametrize(("state", "commit", "error", "target_state"), [
    (TxnState.ONGOING, True, 0, TxnState.PREPARE_COMMIT),
    (TxnState.ONGOING, False, 0, TxnState.PREPARE_ABORT),
    (TxnState.COMPLETE_COMMIT, True, 0, None),
    (TxnState.COMPLETE_COMMIT, False, ErrorCode.INVALID_TXN_STATE, None),
    (TxnState.COMPLETE_ABORT, False, 0, None),
    (TxnState.COMPLETE_ABORT, True, ErrorCode.INVALID_TXN_STATE, None),
    (TxnState.PREPARE_COMMIT, True, ErrorCode.CONCURRENT_TRANSACTIONS, None),
    (TxnState.PREPARE_COMMIT, False, ErrorCode.INVALID_TXN_STATE, None),
    (TxnState.PREPARE_ABORT, False, ErrorCode.CONCURRENT_TRANSACTIONS, None),
    (TxnState.PREPARE_ABORT, True, ErrorCode.INVALID_TXN_STATE, None),
    (TxnState.EMPTY, True, ErrorCode.INVALID_TXN_STATE, None),
])
def test_end_transaction_by_state(state, commit, error, target_state):
    decision = decisions.end_transaction(entry(state, partitions=frozenset({TP})), 100, 0,
                                         commit, 1)
    assert decision.error == error
    assert (decision.target.state if decision.target else None) is target_state
    assert decision.send_markers == (target_state is not None)


def test_end_transaction_from_a_fenced_producer():
    assert decisions.end_transaction(entry(TxnState.ONGOING, epoch=3), 100, 2, True, 1).error \
        == ErrorCode.PRODUCER_FENCED
    assert decisions.end_transaction(None, 100, 0, True, 1).error == \
        ErrorCode.INVALID_PRODUCER_ID_MAPPING


def test_complete_follows_prepare_and_clears_the_partitions():
    prepared = TxnMetadata("t", 1, 0, 1000, TxnState.PREPARE_COMMIT, frozenset({TP}))
    done = decisions.complete(prepared, 5)
    assert (done.state, done.partitions, done.last_update_ms) == (
        TxnState.COMPLETE_COMMIT, frozenset(), 5)
    aborted = decisions.complete(TxnMetadata("t", 1, 0, 1000, TxnState.PREPARE_ABORT), 5)
    assert aborted.state is TxnState.COMPLETE_ABORT


def test_illegal_transitions_raise():
    with pytest.raises(IllegalTransition):
        TxnMetadata("t", 1, 0, 1000, TxnState.EMPTY).transition(TxnState.PREPARE_COMMIT, 1)
    with pytest.raises(IllegalTransition):
        TxnMetadata("t", 1, 0, 1000, TxnState.ONGOING).transition(TxnState.COMPLETE_ABORT, 1)


def test_timeouts_and_expiry():
    ongoing = TxnMetadata("t", 1, 0, 1000, TxnState.ONGOING, start_ms=0, last_update_ms=0)
    assert not decisions.timed_out(ongoing, 1000)
    assert decisions.timed_out(ongoing, 1001)
    idle = TxnMetadata("t", 1, 0, 1000, TxnState.COMPLETE_COMMIT, last_update_ms=0)
    assert decisions.expired(idle, 500, 500) and not decisions.expired(idle, 499, 500)
    assert not decisions.expired(ongoing, 10**9, 500)


def test_partition_of_a_transactional_id_is_kafkas():
    # Java: "my-txn".hashCode() == -1061187895; Utils.abs of it is 1086295753, % 50 == 3.
    assert partition_for_transactional_id("my-txn", 50) == 3
