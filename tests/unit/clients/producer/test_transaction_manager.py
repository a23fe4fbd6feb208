"""The transactional producer's state machine and its I/O-free request flows, driven with
scripted broker answers: Kafka's retriable, abortable and fatal errors."""

from __future__ import annotations

from typing import Any

import pytest

from clients.common.cluster import BrokerNode
from clients.consumer import ConsumerGroupMetadata
from clients.net import KafkaConnectionError
from clients.producer.idempotence import IdempotenceState
from clients.producer.transaction_ops import (
    Flush,
    SendRequest,
    Sleep,
    add_partitions,
    end_transaction,
    init_transactions,
    send_offsets,
)
from clients.producer.transactions import (ProducerTxnState, TransactionManager,
                                           TransactionStateError)
from clients.protocol import ApiKey, ErrorCode, KafkaError

COORDINATOR = {"error_code": 0, "node_id": 2, "host": "h", "port": 2}
Answer = dict[str, Any] | BaseException


def manager() -> TransactionManager:
    return TransactionManager("tid", 60000, IdempotenceState(transactional=True))


def drive(operation: Any, answers: dict[ApiKey, list[Answer]]) -> tuple[Any, list[Any]]:
    """Run an operation, answering each SendRequest from `answers` (per API, in order); returns
    its result and every step it took."""
    steps: list[Any] = []
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = operation.throw(error) if error is not None else operation.send(value)
        except StopIteration as stop:
            return stop.value, steps
        steps.append(step)
        value, error = None, None
        if isinstance(step, SendRequest):
            answer = answers[step.api_key].pop(0)
            if isinstance(answer, BaseException):
                error = answer
            else:
                value = answer


def sent(steps: list[Any], api_key: ApiKey) -> list[SendRequest]:
    return [s for s in steps if isinstance(s, SendRequest) and s.api_key == api_key]


def ready(tm: TransactionManager, producer_id: int = 7, epoch: int = 0) -> TransactionManager:
    tm.start_init()
    tm.initialized(producer_id, epoch)
    tm.coordinator = BrokerNode(2, "h", 2)
    return tm


# -- states ------------------------------------------------------------------------------

def test_methods_out_of_order_are_state_errors() -> None:
    tm = manager()
    with pytest.raises(TransactionStateError, match="begin_transaction in state UNINITIALIZED"):
        tm.begin()
    ready(tm)
    with pytest.raises(TransactionStateError, match="send in state READY"):
        tm.check_send()
    with pytest.raises(TransactionStateError, match="commit_transaction"):
        tm.start_commit()
    tm.begin()
    tm.check_send()
    with pytest.raises(TransactionStateError):
        tm.begin()


def test_an_abortable_error_allows_only_abort() -> None:
    tm = ready(manager())
    tm.begin()
    tm.fail(KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED))
    assert tm.state == ProducerTxnState.ABORTABLE_ERROR
    with pytest.raises(KafkaError, match="must be aborted"):
        tm.start_commit()
    with pytest.raises(KafkaError):
        tm.check_send()
    tm.start_abort()
    tm.completed()
    tm.begin()


def test_invalid_producer_epoch_is_fatal_and_reported_as_fenced() -> None:
    tm = ready(manager())
    tm.begin()
    error = tm.fail(KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH))
    assert error.code == ErrorCode.PRODUCER_FENCED and tm.state == ProducerTxnState.FATAL_ERROR
    for call in (tm.start_abort, tm.start_commit, tm.begin, tm.check_send):
        with pytest.raises(KafkaError) as raised:
            call()
        assert raised.value is error


# -- flows -------------------------------------------------------------------------------

def test_init_finds_the_coordinator_and_retries_loading_and_moved_coordinators() -> None:
    tm = manager()
    tm.start_init()
    answers: dict[ApiKey, list[Answer]] = {
        ApiKey.FIND_COORDINATOR: [{"error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE},
                                  COORDINATOR, COORDINATOR, COORDINATOR],
        ApiKey.INIT_PRODUCER_ID: [{"error_code": ErrorCode.COORDINATOR_LOAD_IN_PROGRESS},
                                  {"error_code": ErrorCode.NOT_COORDINATOR},
                                  KafkaConnectionError("reset"),
                                  {"error_code": 0, "producer_id": 42, "producer_epoch": 3}]}
    _, steps = drive(init_transactions(tm, 0.1), answers)
    assert tm.state == ProducerTxnState.READY
    assert tm.idempotence.identity.producer_id == 42 and tm.idempotence.identity.epoch == 3
    finds = sent(steps, ApiKey.FIND_COORDINATOR)
    assert finds[0].body == {"key": "tid", "key_type": 1}
    assert len(finds) == 4         # unavailable, first, after NOT_COORDINATOR, after the reset
    init = sent(steps, ApiKey.INIT_PRODUCER_ID)[0]
    assert init.node == BrokerNode(2, "h", 2)
    assert init.body["transactional_id"] == "tid" and init.body["producer_id"] == -1
    assert init.body["transaction_timeout_ms"] == 60000


def test_a_fenced_init_is_fatal() -> None:
    tm = manager()
    tm.start_init()
    with pytest.raises(KafkaError) as raised:
        drive(init_transactions(tm, 0.1), {
            ApiKey.FIND_COORDINATOR: [COORDINATOR],
            ApiKey.INIT_PRODUCER_ID: [{"error_code": ErrorCode.PRODUCER_FENCED}]})
    assert raised.value.code == ErrorCode.PRODUCER_FENCED
    assert tm.state == ProducerTxnState.FATAL_ERROR


def test_add_partitions_retries_concurrent_transactions_then_releases_batches() -> None:
    tm = ready(manager())
    tm.begin()
    tm.add_partition(("t", 0))
    tm.add_partition(("t", 1))
    assert tm.held(("t", 0))

    def result(code: int) -> dict[str, Any]:
        return {"results_by_topic_v3_and_below": [{"name": "t", "results_by_partition": [
            {"partition_index": p, "partition_error_code": code} for p in (0, 1)]}]}

    _, steps = drive(add_partitions(tm, 0.1), {ApiKey.ADD_PARTITIONS_TO_TXN: [
        result(ErrorCode.CONCURRENT_TRANSACTIONS), result(0)]})
    assert not tm.held(("t", 0)) and not tm.held(("t", 1)) and not tm.pending
    request = sent(steps, ApiKey.ADD_PARTITIONS_TO_TXN)[0]
    assert request.version == 3
    assert request.body["v3_and_below_topics"] == [{"name": "t", "partitions": [0, 1]}]
    assert request.body["v3_and_below_producer_id"] == 7
    assert [s.seconds for s in steps if isinstance(s, Sleep)] == [0.02]


def test_a_refused_partition_makes_the_transaction_abortable() -> None:
    tm = ready(manager())
    tm.begin()
    tm.add_partition(("secret", 0))
    with pytest.raises(KafkaError) as raised:
        drive(add_partitions(tm, 0.1), {ApiKey.ADD_PARTITIONS_TO_TXN: [
            {"results_by_topic_v3_and_below": [{"name": "secret", "results_by_partition": [
                {"partition_index": 0,
                 "partition_error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED}]}]}]})
    assert raised.value.code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert tm.state == ProducerTxnState.ABORTABLE_ERROR


def test_send_offsets_adds_the_group_then_commits_at_the_group_coordinator() -> None:
    tm = ready(manager())
    tm.begin()
    group = ConsumerGroupMetadata("g", generation_id=5, member_id="m-1")
    group_coordinator = {"error_code": 0, "node_id": 3, "host": "g", "port": 3}
    commit_ok = {"topics": [{"name": "in", "partitions": [
        {"partition_index": 0, "error_code": 0}]}]}
    _, steps = drive(send_offsets(tm, {("in", 0): 17}, group, 0.1), {
        ApiKey.ADD_OFFSETS_TO_TXN: [{"error_code": ErrorCode.CONCURRENT_TRANSACTIONS},
                                    {"error_code": 0}],
        ApiKey.FIND_COORDINATOR: [group_coordinator],
        ApiKey.TXN_OFFSET_COMMIT: [{"topics": [{"name": "in", "partitions": [
            {"partition_index": 0, "error_code": ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}]}]},
            commit_ok]})
    assert tm.offsets_added
    assert sent(steps, ApiKey.ADD_OFFSETS_TO_TXN)[0].body["group_id"] == "g"
    assert sent(steps, ApiKey.FIND_COORDINATOR)[0].body == {"key": "g", "key_type": 0}
    commit = sent(steps, ApiKey.TXN_OFFSET_COMMIT)[0]
    assert commit.node == BrokerNode(3, "g", 3)
    assert (commit.body["generation_id"], commit.body["member_id"]) == (5, "m-1")
    assert commit.body["topics"][0]["partitions"][0]["committed_offset"] == 17


def test_an_illegal_generation_makes_the_offsets_abortable() -> None:
    tm = ready(manager())
    tm.begin()
    with pytest.raises(KafkaError) as raised:
        drive(send_offsets(tm, {("in", 0): 1}, ConsumerGroupMetadata("g"), 0.1), {
            ApiKey.ADD_OFFSETS_TO_TXN: [{"error_code": 0}],
            ApiKey.FIND_COORDINATOR: [COORDINATOR],
            ApiKey.TXN_OFFSET_COMMIT: [{"topics": [{"name": "in", "partitions": [
                {"partition_index": 0, "error_code": ErrorCode.ILLEGAL_GENERATION}]}]}]})
    assert raised.value.code == ErrorCode.ILLEGAL_GENERATION
    assert tm.state == ProducerTxnState.ABORTABLE_ERROR


def test_commit_flushes_then_ends_the_transaction() -> None:
    tm = ready(manager())
    tm.begin()
    tm.add_partition(("t", 0))
    tm.added({("t", 0)})
    tm.start_commit()
    _, steps = drive(end_transaction(tm, True, 0.1), {ApiKey.END_TXN: [
        {"error_code": ErrorCode.CONCURRENT_TRANSACTIONS}, {"error_code": 0}]})
    assert isinstance(steps[0], Flush) and not steps[0].abort
    assert sent(steps, ApiKey.END_TXN)[0].body["committed"] is True
    assert tm.state == ProducerTxnState.READY and not tm.partitions


def test_a_transaction_with_nothing_added_ends_without_end_txn() -> None:
    tm = ready(manager())
    tm.begin()
    tm.start_commit()
    _, steps = drive(end_transaction(tm, True, 0.1), {})
    assert steps == [Flush(abort=False)] and tm.state == ProducerTxnState.READY


def test_an_abort_after_a_sequence_error_bumps_the_epoch() -> None:
    tm = ready(manager(), producer_id=7, epoch=4)
    tm.begin()
    tm.added({("t", 0)})
    tm.batch_failed(KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER))
    assert tm.state == ProducerTxnState.ABORTABLE_ERROR
    tm.start_abort()
    _, steps = drive(end_transaction(tm, False, 0.1), {
        ApiKey.END_TXN: [{"error_code": 0}],
        ApiKey.INIT_PRODUCER_ID: [{"error_code": 0, "producer_id": 7, "producer_epoch": 5}]})
    assert steps[0] == Flush(abort=True)
    assert sent(steps, ApiKey.END_TXN)[0].body["committed"] is False
    bump = sent(steps, ApiKey.INIT_PRODUCER_ID)[0].body
    assert (bump["producer_id"], bump["producer_epoch"]) == (7, 4)
    assert tm.idempotence.identity.epoch == 5 and tm.state == ProducerTxnState.READY


def test_commit_after_a_failed_record_raises_it() -> None:
    tm = ready(manager())
    tm.begin()
    tm.added({("t", 0)})
    tm.start_commit()
    operation = end_transaction(tm, True, 0.1)
    assert next(operation) == Flush(abort=False)
    tm.batch_failed(KafkaError(ErrorCode.MESSAGE_TOO_LARGE))
    with pytest.raises(KafkaError) as raised:
        operation.send(None)
    assert raised.value.code == ErrorCode.MESSAGE_TOO_LARGE




def test_a_record_that_never_got_a_sequence_still_makes_the_transaction_abortable() -> None:
    tm = ready(manager())
    tm.begin()
    tm.batch_failed(KafkaError(ErrorCode.REQUEST_TIMED_OUT), had_sequence=False)
    assert tm.state == ProducerTxnState.ABORTABLE_ERROR and not tm.epoch_bump_needed
