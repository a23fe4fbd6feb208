"""The admin client's retry decisions: which answers fail a call, what is retried, how long
it waits (clients/admin/retries.py, pure)."""

from __future__ import annotations

import pytest

from clients.admin.retries import starter as _starter
from clients.admin.retries import (
    ROUTING_ERRORS,
    RetryBudget,
    Verdict,
    backoff_ms,
    response_error,
    should_retry,
    verdict,
)
from clients.net import KafkaConnectionError, TlsHandshakeError
from clients.protocol import ApiKey, ErrorCode, KafkaError


def test_every_routing_error_is_one_kafka_calls_retriable() -> None:
    assert all(code.retriable for code in ROUTING_ERRORS)
    for name in ("NOT_LEADER_OR_FOLLOWER", "COORDINATOR_NOT_AVAILABLE", "NOT_CONTROLLER",
                 "COORDINATOR_LOAD_IN_PROGRESS", "NOT_COORDINATOR", "REQUEST_TIMED_OUT"):
        assert ErrorCode[name] in ROUTING_ERRORS


def test_an_answer_about_a_resource_is_not_retried() -> None:
    # Retriable in Kafka's class hierarchy, but an answer: the topic does not exist.
    assert not should_retry(KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
    assert not should_retry(KafkaError(ErrorCode.ELECTION_NOT_NEEDED))
    assert not should_retry(KafkaError(ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC))
    assert not should_retry(KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS))
    assert not should_retry(ValueError("bad input"))
    assert should_retry(KafkaError(ErrorCode.NOT_CONTROLLER))
    assert should_retry(KafkaConnectionError("no broker is reachable"))
    # As Kafka's SslAuthenticationException: the same settings fail the same way again.
    assert not should_retry(TlsHandshakeError("TLS handshake with h:1 failed"))


def test_only_brokers_all_refusing_the_handshake_make_a_handshake_error() -> None:
    from clients.common.connections import _unreachable

    refused = KafkaConnectionError("cannot connect to h:2")
    handshake = TlsHandshakeError("TLS handshake with h:1 failed")
    assert type(_unreachable([handshake, handshake])) is TlsHandshakeError
    assert type(_unreachable([handshake, refused])) is KafkaConnectionError
    assert "h:1" in str(_unreachable([handshake, refused]))


def test_a_quorum_without_leader_fails_the_call_and_is_asked_again() -> None:
    quorum = {"error_code": 0, "topics": [{"partitions": [{"error_code": 6}]}]}
    # The partition-level error is the operation's to raise; the top level is fine.
    assert response_error(ApiKey.DESCRIBE_QUORUM, quorum) is None
    moved = {"error_code": ErrorCode.NOT_LEADER_OR_FOLLOWER, "topics": []}
    assert verdict(ApiKey.DESCRIBE_QUORUM, moved, addressed=False) is Verdict.RETRY_CALL
    assert verdict(ApiKey.CREATE_TOPICS, {"error_code": ErrorCode.NOT_CONTROLLER},
                   addressed=False) is Verdict.RETRY_CALL


def test_coordinator_errors_of_a_key_fail_the_call() -> None:
    loading = {"coordinators": [{"key": "t", "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                 "node_id": -1}]}
    assert response_error(ApiKey.FIND_COORDINATOR, loading) == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert verdict(ApiKey.FIND_COORDINATOR, loading, addressed=False) is Verdict.RETRY_CALL
    found = {"coordinators": [{"key": "t", "error_code": 0, "node_id": 2}]}
    assert verdict(ApiKey.FIND_COORDINATOR, found, addressed=False) is Verdict.ACCEPT
    # A transactional id the coordinator does not know is an answer, not a routing error.
    unknown = {"transaction_states": [{"error_code": ErrorCode.TRANSACTIONAL_ID_NOT_FOUND}]}
    assert verdict(ApiKey.DESCRIBE_TRANSACTIONS, unknown, addressed=True) is Verdict.ACCEPT


def test_a_moved_coordinator_restarts_the_operation_a_loading_one_is_asked_again() -> None:
    moved = {"transaction_states": [{"error_code": ErrorCode.NOT_COORDINATOR}]}
    assert verdict(ApiKey.DESCRIBE_TRANSACTIONS, moved, addressed=True) is Verdict.RESTART
    loading = {"transaction_states": [{"error_code": ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}]}
    assert verdict(ApiKey.DESCRIBE_TRANSACTIONS, loading, addressed=True) is Verdict.RETRY_CALL
    gone = {"error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE}
    assert verdict(ApiKey.OFFSET_DELETE, gone, addressed=True) is Verdict.RESTART


def test_backoff_doubles_up_to_its_maximum() -> None:
    assert [backoff_ms(n) for n in range(1, 7)] == [100, 200, 400, 800, 1000, 1000]


def test_budget_stops_before_the_deadline_and_says_so() -> None:
    budget = RetryBudget(deadline=10.0)
    assert budget.next_wait(0.0) == pytest.approx(0.1)
    assert budget.next_wait(9.0) == pytest.approx(0.2)
    assert budget.next_wait(9.7) is None  # 0.4 s more would pass the deadline
    error = budget.exhausted(KafkaError(ErrorCode.NOT_CONTROLLER))
    assert isinstance(error, KafkaError) and error.code == ErrorCode.NOT_CONTROLLER
    assert "after 3 tries" in error.message


def test_a_budget_that_ran_out_says_so_once() -> None:
    # A call's loop gives up inside the operation's loop, which then gives up too: the
    # error reaches the user reworded once.
    budget = RetryBudget(deadline=1.0)
    assert budget.next_wait(0.95) is None
    inner = budget.exhausted(KafkaConnectionError("no broker is reachable"))
    assert budget.next_wait(0.96) is None
    outer = budget.exhausted(inner)
    assert outer is inner
    assert str(outer).count("when the timeout expired") == 1


def test_an_operation_restarts_with_the_same_arguments_even_from_an_iterator() -> None:
    def operation(names: object, flag: bool):  # type: ignore[no-untyped-def]
        return (yield (list(names), flag))  # type: ignore[call-overload]

    start = _starter(operation, (iter(["a", "b"]), True))
    assert next(start()) == (["a", "b"], True)
    assert next(start()) == (["a", "b"], True)
    generator = operation(["x"], False)
    assert _starter(generator, ())() is generator


def test_a_failed_answer_is_resent_or_restarts_the_operation() -> None:
    from clients.admin.operations import Call
    from clients.admin.retries import RetryCall, accepted

    to_controller = Call(ApiKey.CREATE_TOPICS, lambda v: {}, to_controller=True)
    with pytest.raises(RetryCall) as resend:
        accepted(to_controller, {"error_code": ErrorCode.NOT_CONTROLLER})
    assert resend.value.error.code == ErrorCode.NOT_CONTROLLER
    to_coordinator = Call(ApiKey.OFFSET_DELETE, lambda v: {}, node_id=2)
    with pytest.raises(KafkaError) as restart:
        accepted(to_coordinator, {"error_code": ErrorCode.NOT_COORDINATOR, "topics": []})
    assert restart.value.code == ErrorCode.NOT_COORDINATOR
    answer = {"error_code": ErrorCode.GROUP_ID_NOT_FOUND, "topics": []}
    assert accepted(to_coordinator, answer) is answer
