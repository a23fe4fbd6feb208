"""The trio side of group membership: a background task that finds the coordinator,
joins, syncs and heartbeats, plus the coordinator requests the consumer makes itself
(OffsetCommit, OffsetFetch, LeaveGroup).

The coordinator gets connections of its own: the coordinator holds a JoinGroup until the
rebalance ends, and a broker answers one connection's requests in order, so sharing the
fetch connection would stall fetches behind it. For the same reason the background task's
requests (JoinGroup, SyncGroup, Heartbeat) and the application's (OffsetCommit,
OffsetFetch, LeaveGroup) use one connection each: a commit must neither wait behind a held
JoinGroup nor, timing out there, take the join down with it.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Callable, Iterable, Literal, Mapping, TypeVar

import trio

from clients.common.cluster import BrokerNode
from clients.common.connections import TrioConnectionPool
from clients.clock import monotonic_ms
from clients.consumer.group.coordinator_search import (
    CoordinatorSearchReport,
    coordinator_error_reason,
)
from clients.consumer.group.consumer_member import ConsumerGroupMember
from clients.consumer.group.membership import GroupMembership, Send, Wait, coordinator_from
from clients.consumer.group.offsets import (
    CommitFailedError,
    FetchedOffsets,
    ErrorAction,
    classify,
    offset_commit_errors,
    offset_commit_request,
    offset_fetch_request,
    parse_offset_fetch,
)
from clients.consumer.group.protocol import TopicPartition
from clients.net import NO_ANSWER, FatalConnectionError, KafkaConnection, KafkaConnectionError
from clients.protocol import ApiKey, ErrorCode, KafkaError
from clients.protocol.fit import fit_request

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Which coordinator connection a request uses (see the module docstring).
Channel = Literal["member", "app"]


def _at(ms: float | None) -> float:
    """A trio deadline for a ``monotonic_ms`` time (both clocks are monotonic seconds)."""
    if ms is None:
        return math.inf
    return trio.current_time() + max(ms - monotonic_ms(), 0) / 1000


class GroupClient:
    """Drives a GroupMembership over trio; ``run`` is the background task."""

    def __init__(self, membership: GroupMembership | ConsumerGroupMember,
                 pool: TrioConnectionPool,
                 brokers: Callable[[], Iterable[BrokerNode]], retry_backoff_ms: int) -> None:
        """``pool`` also gives the coordinator connections their client id and timeouts."""
        self.membership = membership
        self._pool = pool
        self._brokers = brokers
        self._retry_backoff_s = retry_backoff_ms / 1000
        self._conns: dict[Channel, tuple[KafkaConnection, BrokerNode]] = {}
        self._conn_lock = trio.Lock()
        self._wakeup = trio.Event()
        self._changed = trio.Event()
        self._request_scope: trio.CancelScope | None = None
        self._search_report = CoordinatorSearchReport(membership.settings.group_id)

    # ---- notifications ----

    def wake(self) -> None:
        """Have the background task look at the membership again."""
        self._wakeup.set()

    def notify(self) -> None:
        """Wake whoever waits in ``wait_changed``."""
        self._changed.set()
        self._changed = trio.Event()

    async def wait_changed(self, deadline: float) -> None:
        """Until the membership moves on (an answer arrived) or ``deadline`` (trio time)."""
        event = self._changed
        with trio.move_on_at(deadline):
            await event.wait()

    # ---- background task ----

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
                  ) -> None:
        task_status.started()
        while self._pool.fatal_error is None:  # else poll raises it: the member is done
            action = self.membership.next_action(monotonic_ms())
            if isinstance(action, Wait):
                event = self._wakeup
                with trio.move_on_at(_at(action.until_ms)):
                    await event.wait()
                if event.is_set():
                    self._wakeup = trio.Event()
                continue
            await self._perform(action)
            self.notify()

    async def _perform(self, action: Send) -> None:
        response: dict[str, Any] | None = None
        failure: BaseException | None = None
        with trio.CancelScope() as scope:
            self._request_scope = scope
            try:
                if action.to_coordinator:
                    response = await self.coordinator_request(action.api_key, action.body,
                                                              action.timeout_ms, "member")
                else:
                    response = await self._pool.request_any(action.api_key, action.body,
                                                            self._brokers(), action.version)
            except (*NO_ANSWER, KafkaError) as exc:
                failure = exc
                logger.debug("%s for group %s failed: %s", action.api_key.name,
                             self.membership.settings.group_id, exc)
            finally:
                self._request_scope = None
        if scope.cancel_called:
            # Abandoned by unsubscribe/close: any answer would be stale.
            self.membership.abandon(action.api_key)
            return
        if response is None:
            self.membership.handle_failure(action.api_key, monotonic_ms(), failure)
        else:
            self.membership.handle_response(action.api_key, response, monotonic_ms())
        if action.api_key == ApiKey.FIND_COORDINATOR and self._pool.fatal_error is None:
            self._report_search(response, failure)

    def _report_search(self, response: dict[str, Any] | None,
                       failure: BaseException | None) -> None:
        """Say (rate-limited) why the group has no coordinator, and when it has one again:
        otherwise a consumer of an unreachable cluster would wait in silence."""
        if self.membership.coordinator is not None:
            message = self._search_report.found()
            if message is not None:
                logger.info(message)
            return
        if response is None:
            reason = str(failure) if failure is not None else "no answer"
        else:
            code = ErrorCode.from_code(response.get("error_code", 0))
            reason = coordinator_error_reason(code.name,
                                              response.get("error_message") or code.message)
        message = self._search_report.failed(reason, monotonic_ms(), unanswered=response is None)
        if message is not None:
            logger.warning(message)

    def abandon_request(self) -> None:
        if self._request_scope is not None:
            self._request_scope.cancel()

    # ---- the coordinator connection ----

    async def coordinator_request(self, api_key: ApiKey, body: dict[str, Any],
                                  timeout_ms: int | None = None,
                                  channel: Channel = "app") -> dict[str, Any]:
        """One request to the current coordinator; KafkaConnectionError if there is none
        or it does not answer (the connection is then dropped)."""
        node = self.membership.coordinator
        if node is None:
            raise KafkaConnectionError("the group coordinator is not known")
        conn = await self._connection(node, channel)
        try:
            version = conn.pick_version(api_key)
            timeout_s = timeout_ms / 1000 if timeout_ms else self._pool.request_timeout_s
            return await conn.request(api_key, fit_request(api_key, version, body), version,
                                      timeout=timeout_s)
        except NO_ANSWER:
            await self._drop_connection(conn)
            raise

    async def _connection(self, node: BrokerNode, channel: Channel) -> KafkaConnection:
        async with self._conn_lock:
            current = self._conns.get(channel)
            if current is not None and (current[0].closed or current[1] != node):
                del self._conns[channel]
                await current[0].aclose()
                current = None
            if current is None:
                conn = await self._pool.open(node.host, node.port)
                current = self._conns[channel] = (conn, node)
            return current[0]

    async def _drop_connection(self, conn: KafkaConnection | None = None,
                               channel: Channel | None = None) -> None:
        """Close ``conn``, or the channel's connection, or (neither given) all of them."""
        for name, (open_conn, _) in list(self._conns.items()):
            if (conn is None or conn is open_conn) and (channel is None or channel == name):
                del self._conns[name]
                await open_conn.aclose()

    async def ensure_coordinator(self, deadline: float) -> BrokerNode:
        """The coordinator, looking it up here if the background task has not."""
        m = self.membership
        while m.coordinator is None:
            request = m.find_coordinator_request()
            code = ErrorCode.COORDINATOR_NOT_AVAILABLE
            try:
                node, code = coordinator_from(await self._pool.request_any(
                    ApiKey.FIND_COORDINATOR, request.body, self._brokers(), request.version))
                if node is not None and m.coordinator is None:
                    m.coordinator = node
                    self.wake()
            except FatalConnectionError:
                raise
            except NO_ANSWER as exc:
                logger.debug("FindCoordinator failed: %s", exc)
            if m.coordinator is not None:
                break
            if code not in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
                            ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
                raise KafkaError(code, f"FindCoordinator for group {m.settings.group_id}")
            await self._backoff_before(deadline, code)
        assert m.coordinator is not None
        return m.coordinator

    async def _backoff_before(self, deadline: float, code: ErrorCode) -> None:
        if trio.current_time() + self._retry_backoff_s >= deadline:
            raise KafkaError(code, f"group {self.membership.settings.group_id}: "
                                   "no answer in time")
        await trio.sleep(self._retry_backoff_s)

    async def _coordinator_call(self, api_key: ApiKey, body: dict[str, Any],
                                deadline: float) -> dict[str, Any] | None:
        """Send to the coordinator, finding it first; None if it was lost on the way."""
        await self.ensure_coordinator(deadline)
        try:
            with trio.fail_after(max(deadline - trio.current_time(), 0)):
                return await self.coordinator_request(api_key, body)
        except FatalConnectionError:
            raise
        except (*NO_ANSWER, trio.TooSlowError) as exc:
            logger.debug("%s failed: %s", api_key.name, exc)
            return None

    async def _until_done(self, api_key: ApiKey,
                          body: dict[str, Any] | Callable[[], dict[str, Any]],
                          timeout_s: float,
                          read: Callable[[dict[str, Any]], tuple[T, ErrorCode]],
                          give_up: Callable[[ErrorCode], None]) -> T:
        """Send ``body`` to the coordinator until ``read`` finds no error in the answer,
        and return what it read. On an error the coordinator is looked up again if it is
        gone (no answer counts as that), else ``give_up`` raises unless the error is worth
        retrying; KafkaError when ``timeout_s`` passes first. A callable ``body`` is built
        again for each attempt."""
        deadline = trio.current_time() + timeout_s
        while True:
            response = await self._coordinator_call(
                api_key, body() if callable(body) else body, deadline)
            code = ErrorCode.COORDINATOR_NOT_AVAILABLE
            if response is not None:
                result, code = read(response)
                if code == ErrorCode.NONE:
                    return result
            if classify(code) == ErrorAction.FIND_COORDINATOR:
                self.membership.coordinator_dead()
            else:
                give_up(code)
            await self._backoff_before(deadline, code)

    # ---- offsets ----

    async def commit(self, offsets: Mapping[TopicPartition, int], generation_id: int,
                     member_id: str, timeout_s: float) -> None:
        """OffsetCommit until it succeeds; CommitFailedError if the generation is stale."""
        m = self.membership
        sent = [generation_id]      # the epoch of the latest attempt

        def still_member() -> bool:
            return isinstance(m, ConsumerGroupMember) and generation_id > 0 \
                and m.member_id == member_id and m.member_epoch > 0

        def body() -> dict[str, Any]:
            # The consumer protocol: a commit the coordinator finds stale goes again with
            # the epoch the member has learnt since, as Kafka's consumer retries it.
            if still_member():
                sent.append(m.member_epoch)
            return offset_commit_request(m.settings.group_id, sent[-1], member_id,
                                         m.settings.group_instance_id, offsets)

        def read(response: dict[str, Any]) -> tuple[None, ErrorCode]:
            return None, next(iter(offset_commit_errors(response).values()), ErrorCode.NONE)

        def give_up(code: ErrorCode) -> None:
            outcome = classify(code)
            if code == ErrorCode.STALE_MEMBER_EPOCH and still_member():
                return      # the next heartbeat brings the newer epoch
            if outcome in (ErrorAction.REJOIN, ErrorAction.RESET_AND_REJOIN):
                m.group_error(code, "OffsetCommit", monotonic_ms(), sent[-1], member_id)
                self.wake()
                raise CommitFailedError(code, "the commit failed because the group "
                                              f"rebalanced ({code.name}); poll again to rejoin")
            if outcome != ErrorAction.RETRY:
                raise KafkaError(code, f"OffsetCommit for group {m.settings.group_id}")

        await self._until_done(ApiKey.OFFSET_COMMIT, body, timeout_s, read, give_up)

    async def fetch_committed(self, partitions: Iterable[TopicPartition], timeout_s: float
                              ) -> dict[TopicPartition, int | None]:
        """Committed offsets (None where there is none), retrying retriable errors."""
        wanted = list(partitions)
        if not wanted:
            return {}
        group_id = self.membership.settings.group_id
        member_id, member_epoch = self.membership.offset_fetch_member()

        def read(response: dict[str, Any]) -> tuple[FetchedOffsets, ErrorCode]:
            fetched = parse_offset_fetch(response)
            return fetched, fetched.error

        def give_up(code: ErrorCode) -> None:
            if not code.retriable:
                raise KafkaError(code, f"OffsetFetch for group {group_id}")

        fetched = await self._until_done(ApiKey.OFFSET_FETCH,
                                         offset_fetch_request(group_id, wanted, member_id,
                                                              member_epoch), timeout_s,
                                         read, give_up)
        return {tp: fetched.offsets.get(tp) for tp in wanted}

    async def leave(self, timeout_s: float) -> None:
        """Leave the group (dropping any request in flight): LeaveGroup, or a heartbeat
        with a leaving epoch under the consumer protocol; errors are only logged."""
        self.abandon_request()
        body = self.membership.unsubscribe()
        self.notify()
        # A JoinGroup may still be held on the member connection; the abandoned request
        # leaves it unusable, and LeaveGroup goes on the application's.
        await self._drop_connection(channel="member")
        if body is None or self.membership.coordinator is None:
            return
        with trio.move_on_after(timeout_s):
            try:
                await self.coordinator_request(self.membership.leave_api_key, body)
            except (*NO_ANSWER, KafkaError) as exc:
                logger.debug("LeaveGroup failed: %s", exc)

    async def aclose(self) -> None:
        await self._drop_connection()
