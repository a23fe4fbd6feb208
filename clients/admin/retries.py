"""When the admin client retries, and how long it waits (pure, no I/O).

Kafka's admin client retries a call that fails with a retriable error until the call's
deadline (``default.api.timeout.ms``), backing off between tries and looking the controller
or coordinator up again. Errors that describe a resource (an unknown topic, an election that
is not needed) are answers, not failures of the call, and are not retried.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Iterator, Mapping

from clients.admin.operations import Call, Operation
from clients.net import FatalConnectionError, KafkaConnectionError
from clients.protocol import ApiKey, ErrorCode, KafkaError

# The retriable errors that say the request reached the wrong or a not yet ready broker:
# another try, after fresh metadata or a new coordinator lookup, can succeed.
ROUTING_ERRORS = frozenset({
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.NETWORK_EXCEPTION,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.NOT_CONTROLLER,
    ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_LEADER_EPOCH,
})
# After these a coordinator-addressed call must find the coordinator again, not repeat.
COORDINATOR_MOVED = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})
# Responses whose per-key entries carry coordinator errors (the key's answer is a failure
# of the call, as in Kafka's coordinator-keyed admin handlers).
_KEYED_ENTRIES = {
    ApiKey.FIND_COORDINATOR: "coordinators",
    ApiKey.DESCRIBE_TRANSACTIONS: "transaction_states",
    ApiKey.DESCRIBE_GROUPS: "groups",
    ApiKey.OFFSET_FETCH: "groups",
}
_COORDINATOR_ERRORS = COORDINATOR_MOVED | {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}

RETRY_BACKOFF_MS = 100
RETRY_BACKOFF_MAX_MS = 1000


class Verdict(Enum):
    ACCEPT = "accept"          # hand the response to the operation
    RETRY_CALL = "retry call"  # send the same call again (to a target picked anew)
    RESTART = "restart"        # the operation must start over (find the coordinator again)


def _code(value: Any) -> ErrorCode:
    try:
        return ErrorCode.from_code(int(value))
    except (TypeError, ValueError):
        return ErrorCode.NONE


def response_error(api_key: int, response: Mapping[str, Any]) -> ErrorCode | None:
    """The routing error that failed the whole call: a top-level one, or a coordinator
    error of one of the keys of a coordinator-keyed API; None when the call succeeded."""
    top = _code(response.get("error_code", 0))
    if top in ROUTING_ERRORS:
        return top
    field = _KEYED_ENTRIES.get(api_key)
    if field is None:
        return None
    for entry in response.get(field) or ():
        code = _code(entry.get("error_code", 0))
        if code in _COORDINATOR_ERRORS:
            return code
    return None


def verdict(api_key: int, response: Mapping[str, Any], addressed: bool) -> Verdict:
    """What to do with a response; `addressed` says the call went to a named broker (a
    coordinator or a leader), which another try of the same call would reach again."""
    error = response_error(api_key, response)
    if error is None:
        return Verdict.ACCEPT
    if addressed and error in COORDINATOR_MOVED | {ErrorCode.NOT_LEADER_OR_FOLLOWER}:
        return Verdict.RESTART
    return Verdict.RETRY_CALL


def should_retry(error: BaseException) -> bool:
    """Whether an operation that failed with `error` is worth starting over: a broker
    that could not be reached (not one that refused the TLS handshake or the credentials,
    or speaks another security protocol), or a routing error (Kafka's retriable call
    failures)."""
    if isinstance(error, KafkaConnectionError):
        return not isinstance(error, FatalConnectionError)
    return isinstance(error, KafkaError) and error.code in ROUTING_ERRORS


def backoff_ms(attempt: int, base_ms: int = RETRY_BACKOFF_MS,
               max_ms: int = RETRY_BACKOFF_MAX_MS) -> int:
    """The wait before try `attempt` + 1 (attempt counts from 1): Kafka's exponential
    backoff from retry.backoff.ms, doubling up to retry.backoff.max.ms."""
    return int(min(max_ms, base_ms * 2 ** max(0, attempt - 1)))


@dataclass
class RetryBudget:
    """One admin call's tries against its deadline (times in seconds, any clock)."""

    deadline: float
    base_backoff_ms: int = RETRY_BACKOFF_MS
    attempts: int = 0

    def next_wait(self, now: float) -> float | None:
        """Count a failed try; the seconds to wait before the next one, or None when the
        deadline leaves no time for it."""
        self.attempts += 1
        wait = backoff_ms(self.attempts, self.base_backoff_ms) / 1000
        if now + wait >= self.deadline:
            return None
        return wait

    # The reworded error once the budget ran out: the operation's loop around a call's
    # loop then raises it as it is, not reworded a second time.
    spent: BaseException | None = None

    def exhausted(self, error: BaseException) -> BaseException:
        """`error`, reworded to say the call was retried until its deadline."""
        if self.spent is not None:
            return self.spent
        note = f" (still failing after {self.attempts} tries, when the timeout expired)"
        if isinstance(error, KafkaError):
            self.spent = KafkaError(error.code, error.message + note)
        elif isinstance(error, KafkaConnectionError):
            self.spent = KafkaConnectionError(str(error) + note)
        else:
            self.spent = error
        return self.spent


class RetryCall(Exception):
    """The response failed the whole call with a routing error; send the call again."""

    def __init__(self, error: KafkaError) -> None:
        super().__init__(str(error))
        self.error = error


def accepted(call: Call, response: dict[str, Any]) -> dict[str, Any]:
    """`response` when it answers the call; RetryCall or (the operation must look its
    broker up again) KafkaError when a routing error failed the whole call."""
    outcome = verdict(call.api_key, response, call.node_id is not None)
    if outcome is Verdict.ACCEPT:
        return response
    error = KafkaError(response_error(call.api_key, response) or 0)
    if outcome is Verdict.RESTART:
        raise error
    raise RetryCall(error)


def failure_of(exc: BaseException) -> BaseException:
    return exc.error if isinstance(exc, RetryCall) else exc


def starter(operation: Operation | Callable[..., Operation],
            args: tuple[Any, ...]) -> Callable[[], Operation]:
    """A function starting the operation afresh (one-shot iterators among the arguments
    are read into tuples first); a generator can only be started once."""
    if not callable(operation):
        return lambda: operation
    kept = tuple(tuple(a) if isinstance(a, Iterator) else a for a in args)
    return lambda: operation(*kept)
