"""The trio consumer: ``async with Consumer(config) as consumer: ...``.

``poll`` returns buffered records, or fetches from every assigned partition's leader at
once (one Fetch per broker) until records arrive or the timeout passes. Fetches run in
background tasks and one answer ahead (see ``clients.consumer.core``): a partition's next
Fetch goes out when an answer arrives and when ``poll`` hands records out, so the broker
reads while the application works. Partitions come
from ``assign`` or, with ``group.id``, from ``subscribe``: then a background task in the
consumer's own nursery keeps the membership alive (heartbeats) between polls, while
revoking, taking on an assignment and rebalance listeners happen in ``poll``, as in Kafka's
consumer. Work that may wait on an unavailable coordinator (periodic auto-commits, the
committed offsets of a new assignment, watching the subscribed topics' metadata) runs in
background tasks of that nursery, so ``poll`` keeps to its timeout.
"""

from __future__ import annotations

import inspect
import logging
import math
import re
from typing import Any, Awaitable, Callable, Iterable, Mapping

import trio

from clients.common.cluster import metadata_request
from clients.common.connections import TrioConnectionPool
from clients.clock import monotonic_ms
from clients.consumer.config import ConsumerConfig
from clients.consumer.core import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ConsumerCore,
    TopicPartition,
)
from clients.consumer.group.assignors import make_assignors
from clients.consumer.group.consumer_member import ConsumerGroupMember
from clients.consumer.group.membership import GroupMembership, GroupSettings
from clients.consumer.group.offsets import CommitFailedError
from clients.consumer.group.trio_group import GroupClient
from clients.consumer.group_metadata import ConsumerGroupMetadata
from clients.consumer.records import ConsumerRecord
from clients.consumer.subscription import Listener, SubscriptionDriver
from clients.interceptors import chain, notify
from clients.net import NO_ANSWER, KafkaConnectionError
from clients.net.failure_log import RepeatedFailureLog
from clients.protocol import ApiKey, ErrorCode, KafkaError, ProtocolError

logger = logging.getLogger(__name__)

NO_GROUP_ID = "subscribe and commits need group.id in the consumer configuration"

# A commit callback: ``callback(offsets, error)``, error None on success; plain or async.
CommitCallback = Callable[[dict[TopicPartition, int], BaseException | None], Any]


class WakeupException(Exception):
    """``poll`` was interrupted by ``wakeup()`` (Kafka's WakeupException)."""
MIXED = "subscribe() and assign() are mutually exclusive: unsubscribe() first"


class Consumer:
    """A trio consumer: manual assignment (``assign``) or a group member (``subscribe``)."""

    def __init__(self, config: ConsumerConfig | Mapping[str, Any] | None = None,
                 **overrides: Any) -> None:
        if not isinstance(config, ConsumerConfig):
            config = ConsumerConfig.from_mapping(config, **overrides)
        self.config = config
        self._core = ConsumerCore(config)
        self._pool = TrioConnectionPool(config.bootstrap_servers, config.client_id,
                                        config.connect_timeout_ms / 1000,
                                        config.request_timeout_ms / 1000,
                                        security=config.security, sasl=config.sasl)
        self._metadata_log = RepeatedFailureLog(logger, "metadata refresh")
        self._group: GroupClient | None = None
        if config.group_id is not None:
            settings = GroupSettings(
                group_id=config.group_id, session_timeout_ms=config.session_timeout_ms,
                rebalance_timeout_ms=config.max_poll_interval_ms,
                heartbeat_interval_ms=config.heartbeat_interval_ms,
                retry_backoff_ms=config.retry_backoff_ms,
                request_timeout_ms=config.request_timeout_ms,
                group_instance_id=config.group_instance_id,
                rack_id=config.client_rack or None)
            membership: GroupMembership | ConsumerGroupMember
            if config.group_protocol == "consumer":
                membership = ConsumerGroupMember(settings, config.group_remote_assignor)
            else:
                membership = GroupMembership(
                    settings, make_assignors(config.partition_assignment_strategy))
            self._group = GroupClient(membership, self._pool,
                                      lambda: self._core.cluster.brokers.values(),
                                      config.retry_backoff_ms)
        self._subscribed = False
        self._driver: SubscriptionDriver | None = None
        if self._group is not None:
            self._driver = SubscriptionDriver(config, self._core, self._group, self._pool,
                                              self._spawn, self.commit, self._current_offsets)
        self._nursery_manager: Any = None
        self._nursery: trio.Nursery | None = None
        self._heartbeat_scope: trio.CancelScope | None = None
        self._tasks: set[trio.CancelScope] = set()     # background tasks, cancelled by close
        self._closed = False
        self._wakeup_requested = False
        self._poll_scope: trio.CancelScope | None = None
        self._fetch_ended = trio.Event()       # set whenever a Fetch ends; renewed by poll
        self._last_async_commit = trio.Event()
        self._last_async_commit.set()
        # Finished asynchronous commits whose callbacks run at the next poll/commit/close.
        self._commit_results: list[tuple[CommitCallback, dict[TopicPartition, int],
                                         BaseException | None]] = []
        if self._driver is not None:
            self._driver.on_committed = self._on_committed

    async def __aenter__(self) -> Consumer:
        # The nursery hosts the heartbeat task; it lives as long as the ``async with``.
        self._nursery_manager = trio.open_nursery()
        self._nursery = await self._nursery_manager.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        try:
            await self.close()
        finally:
            manager, self._nursery_manager, self._nursery = self._nursery_manager, None, None
            if manager is not None:
                return await manager.__aexit__(*exc_info)
        return None

    # ---- assignment ----

    def subscribe(self, topics: Iterable[str] | re.Pattern[str],
                  on_assign: Listener | None = None,
                  on_revoke: Listener | None = None, on_lost: Listener | None = None
                  ) -> None:
        """Join ``group.id`` and consume the partitions the group assigns from ``topics``
        (with ``group.protocol=consumer`` also a compiled pattern, which the coordinator
        matches against the topics, as Kafka's ``subscribe(SubscriptionPattern)``).

        Listeners run inside ``poll`` (and ``unsubscribe``/``close``). ``on_revoke(partitions)``
        runs before the partitions are given up and before the member rejoins (after the
        auto-commit), so it may still ``commit()`` and read ``position()`` for them under
        the old generation. ``on_assign(partitions)`` runs once new ones are taken on
        (positions come from the committed offsets, else ``auto.offset.reset``).
        ``on_lost(partitions)`` (Kafka's onPartitionsLost), when given, runs instead of
        ``on_revoke`` for partitions that may already be another member's (this member
        was dropped from the group, e.g. after ``max.poll.interval.ms``); nothing is
        committed for them. Needs ``async with``.
        """
        if self._group is None:
            raise ValueError(NO_GROUP_ID)
        if self._core.assignment and not self._subscribed:
            raise ValueError(MIXED)
        if self._nursery is None:
            raise RuntimeError("subscribe needs the consumer opened with `async with`, "
                               "whose nursery runs the heartbeats")
        names = topics if isinstance(topics, re.Pattern) else \
            [topics] if isinstance(topics, str) else list(topics)
        if not names:
            raise ValueError("subscribe needs at least one topic; use unsubscribe() to stop")
        driver = self._driver
        assert driver is not None
        driver.on_assign, driver.on_revoke, driver.on_lost = on_assign, on_revoke, on_lost
        self._group.membership.subscribe(names)
        if self._heartbeat_scope is None:
            self._heartbeat_scope = self._spawn(self._group.run)
        if not self._subscribed:
            driver.next_metadata_watch = trio.current_time() + \
                self.config.metadata_max_age_ms / 1000
        self._subscribed = True
        self._group.wake()

    def _spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> trio.CancelScope:
        """Start ``fn`` in the consumer's nursery under a scope made here, so ``close`` can
        cancel it even before it starts (a scope cancelled before entry cancels at once)."""
        assert self._nursery is not None
        scope = trio.CancelScope()
        self._tasks.add(scope)

        async def run() -> None:
            try:
                with scope:
                    await fn(*args)
            finally:
                self._tasks.discard(scope)
        self._nursery.start_soon(run)
        return scope

    def subscription(self) -> list[str]:
        if not self._subscribed or self._group is None:
            return []
        return list(self._group.membership.subscription or ())

    async def unsubscribe(self) -> None:
        """Give up the assignment (auto-commit, ``on_revoke``) and leave the group."""
        if not self._subscribed or self._group is None:
            return
        assert self._driver is not None
        await self._driver.revoke_all()
        await self._group.leave(self.config.request_timeout_ms / 1000)
        self._subscribed = False

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Consume exactly these (topic, partition) pairs, replacing any earlier set.

        With ``group.id`` (as in Kafka, no group membership) a new partition starts at the
        group's committed offset, else by ``auto.offset.reset``; and ``enable.auto.commit``
        commits the positions from ``poll`` and on ``close``."""
        if self._subscribed:
            raise ValueError(MIXED)
        if self._group is not None:
            if self._nursery is None:
                raise RuntimeError("assign with group.id needs the consumer opened with "
                                   "`async with`: committed-offset lookups and auto-commits "
                                   "run in its background tasks")
            assert self._driver is not None
            if not self._core.assignment:
                self._driver.start_auto_commit_clock()
        self._core.assign(partitions, committed_first=self._group is not None)

    def assignment(self) -> list[TopicPartition]:
        return self._core.assignment

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._core.seek(tp, offset)

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._core.request_reset(partitions, EARLIEST_TIMESTAMP)

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._core.request_reset(partitions, LATEST_TIMESTAMP)

    async def position(self, tp: TopicPartition) -> int:
        """The next offset to be returned for ``tp``, resolving a pending reset first."""
        deadline = trio.current_time() + self.config.request_timeout_ms / 1000
        while (position := self._core.position(tp)) is None:
            if trio.current_time() >= deadline:
                raise KafkaError(ErrorCode.REQUEST_TIMED_OUT,
                                 f"no position for {tp[0]}-{tp[1]} in time")
            self._step_manual_group()
            await self._update_positions()
            self._core.raise_errors()
            self._pool.check_fatal()
            if self._core.position(tp) is None:
                await trio.sleep(self.config.retry_backoff_ms / 1000)
        return position

    async def partitions_for(self, topic: str) -> list[int]:
        """The topic's partition ids from fresh metadata; KafkaError if it does not exist."""
        response = await self._pool.request_any(ApiKey.METADATA, metadata_request([topic]),
                                                self._core.cluster.brokers.values())
        self._core.apply_metadata(response, monotonic_ms())
        error = self._core.cluster.topic_error(topic)
        if error is not None:
            raise KafkaError(error, f"topic {topic!r}: {error.message}")
        return sorted(self._core.cluster.topics[topic].partitions)

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop fetching ``partitions`` (assigned ones) until ``resume``; a rebalance
        that keeps them keeps them paused."""
        self._core.pause(partitions)

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        self._core.resume(partitions)

    def paused(self) -> list[TopicPartition]:
        return self._core.paused

    # ---- offsets by time ----

    async def beginning_offsets(self, partitions: Iterable[TopicPartition]
                                ) -> dict[TopicPartition, int]:
        """The first offset of each partition (its log start offset)."""
        found = await self._list_offsets({tp: EARLIEST_TIMESTAMP for tp in partitions})
        return {tp: answer[0] for tp, answer in found.items() if answer is not None}

    async def end_offsets(self, partitions: Iterable[TopicPartition]
                          ) -> dict[TopicPartition, int]:
        """The offset after the last record of each partition (its high watermark)."""
        found = await self._list_offsets({tp: LATEST_TIMESTAMP for tp in partitions})
        return {tp: answer[0] for tp, answer in found.items() if answer is not None}

    async def offsets_for_times(self, timestamps: Mapping[TopicPartition, int]
                                ) -> dict[TopicPartition, tuple[int, int] | None]:
        """Per partition, (offset, timestamp) of the first record whose timestamp is at
        least the one asked for, or None when there is none (Kafka's
        ``offsetsForTimes``)."""
        for tp, ts in timestamps.items():
            if ts < 0:
                raise ValueError(f"timestamp for {tp[0]}-{tp[1]} must not be negative")
        return await self._list_offsets(dict(timestamps))

    async def _list_offsets(self, query: Mapping[TopicPartition, int]
                            ) -> dict[TopicPartition, tuple[int, int] | None]:
        """ListOffsets to each partition's leader, retrying retriable errors until
        ``default.api.timeout.ms``."""
        wanted = {(str(t), int(p)): ts for (t, p), ts in query.items()}
        out: dict[TopicPartition, tuple[int, int] | None] = {}
        deadline = trio.current_time() + self.config.default_api_timeout_ms / 1000
        while True:
            todo = {tp: ts for tp, ts in wanted.items() if tp not in out}
            if not todo:
                return out
            response = await self._pool.request_any(
                ApiKey.METADATA, metadata_request(sorted({t for t, _ in todo})),
                self._core.cluster.brokers.values())
            self._core.apply_metadata(response, monotonic_ms())
            last_error: KafkaError | None = None
            for tp, ts in todo.items():
                error = self._core.cluster.topic_error(tp[0])
                if error is not None and not error.retriable:
                    raise KafkaError(error, f"topic {tp[0]!r}: {error.message}")
            by_node: dict[int, dict[str, list[dict[str, Any]]]] = {}
            for tp, ts in todo.items():
                leader = self._core.cluster.leader_for(*tp)
                if leader is not None:
                    by_node.setdefault(leader.node_id, {}).setdefault(tp[0], []).append(
                        {"partition_index": tp[1], "timestamp": ts})
            for node_id, topics in by_node.items():
                body = {"replica_id": -1, "isolation_level": self.config.isolation_level,
                        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
                try:
                    answer = await self._pool.request(self._core.cluster.brokers[node_id],
                                                      ApiKey.LIST_OFFSETS, body)
                except (KafkaConnectionError, ProtocolError) as exc:
                    last_error = KafkaError(ErrorCode.NETWORK_EXCEPTION, str(exc))
                    continue
                for topic in answer.get("topics", ()):
                    for p in topic["partitions"]:
                        tp = (topic["name"], p["partition_index"])
                        code = ErrorCode.from_code(p["error_code"])
                        if code == ErrorCode.NONE:
                            offset = p.get("offset", -1)
                            out[tp] = (offset, p.get("timestamp", -1)) if offset >= 0 else None
                        elif code.retriable:
                            last_error = KafkaError(code, f"ListOffsets for {tp[0]}-{tp[1]}")
                        else:
                            raise KafkaError(code, f"ListOffsets for {tp[0]}-{tp[1]}")
            if all(tp in out for tp in wanted):
                return out
            if trio.current_time() >= deadline:
                raise last_error or KafkaError(ErrorCode.REQUEST_TIMED_OUT,
                                               "no leader for some partitions in time")
            await trio.sleep(self.config.retry_backoff_ms / 1000)

    # ---- polling ----

    def wakeup(self) -> None:
        """Make the ``poll`` in progress, or else the next one, raise WakeupException.
        Call it on the consumer's trio thread (the blocking consumer's ``wakeup`` may be
        called from any thread or a signal handler)."""
        self._wakeup_requested = True
        if self._poll_scope is not None:
            self._poll_scope.cancel()

    def _check_wakeup(self) -> None:
        if self._wakeup_requested:
            self._wakeup_requested = False
            raise WakeupException("poll was interrupted by wakeup()")

    async def poll(self, timeout_ms: float = 0, max_records: int | None = None
                   ) -> list[ConsumerRecord]:
        """Records from the assigned partitions, at most ``max_records`` (default
        ``max.poll.records``); an empty list once ``timeout_ms`` passes without any.
        Keys and values pass ``key.deserializer``/``value.deserializer``, then every
        interceptor's ``on_consume``.

        A group member also rebalances and auto-commits here (see ``subscribe``), and
        callbacks of finished asynchronous commits run. WakeupException after
        ``wakeup()``."""
        self._check_wakeup()
        await self._run_commit_callbacks()
        records: list[ConsumerRecord] = []
        with trio.CancelScope() as scope:
            self._poll_scope = scope
            try:
                records = await self._poll(timeout_ms, max_records)
            finally:
                self._poll_scope = None
        self._check_wakeup()
        return self._deliver(records) if records else records

    def _deliver(self, records: list[ConsumerRecord]) -> list[ConsumerRecord]:
        kd, vd = self.config.key_deserializer, self.config.value_deserializer
        if kd is not None or vd is not None:
            records = [ConsumerRecord(
                r.topic, r.partition, r.offset, r.timestamp, r.timestamp_type,
                kd(r.topic, r.key) if kd is not None else r.key,
                vd(r.topic, r.value) if vd is not None else r.value, r.headers)
                for r in records]
        if self.config.interceptors:
            records = list(chain(self.config.interceptors, "on_consume", records))
        return records

    def _on_committed(self, offsets: Mapping[TopicPartition, int]) -> None:
        if self.config.interceptors:
            notify(self.config.interceptors, "on_commit", dict(offsets))

    async def _run_commit_callbacks(self) -> None:
        while self._commit_results:
            callback, offsets, error = self._commit_results.pop(0)
            result = callback(offsets, error)
            if inspect.isawaitable(result):
                await result

    async def _poll(self, timeout_ms: float, max_records: int | None
                    ) -> list[ConsumerRecord]:
        limit = max_records or self.config.max_poll_records
        deadline = trio.current_time() + max(timeout_ms, 0) / 1000
        while True:
            self._core.raise_errors()
            self._pool.check_fatal()
            if self._subscribed:
                assert self._driver is not None
                await self._driver.step()
            records = self._core.drain(limit)
            if records:
                self._send_fetches(self.config.fetch_max_wait_ms)
                return records
            if self._fetch_ended.is_set():
                self._fetch_ended = trio.Event()
            if not self._core.assignment:
                if self._subscribed:
                    assert self._group is not None and self._driver is not None
                    await self._group.wait_changed(
                        min(deadline, self._driver.next_metadata_watch))
                    if trio.current_time() < deadline:
                        continue
                    return []
                await trio.sleep_until(deadline)
                return []
            self._step_manual_group()
            await self._update_positions()
            self._core.raise_errors()
            self._pool.check_fatal()
            remaining_ms = max((deadline - trio.current_time()) * 1000, 0)
            self._send_fetches(int(min(self.config.fetch_max_wait_ms, math.floor(remaining_ms))))
            if self._core.fetching:
                with trio.move_on_at(deadline):
                    await self._fetch_ended.wait()
            elif remaining_ms > 0:
                await trio.sleep(min(self.config.retry_backoff_ms, remaining_ms) / 1000)
            if trio.current_time() >= deadline and not self._core.has_buffered():
                self._core.raise_errors()
                return []

    # ---- offsets ----

    async def commit(self, offsets: Mapping[TopicPartition, int] | None = None, *,
                     asynchronous: bool = False, callback: CommitCallback | None = None
                     ) -> None:
        """Commit ``offsets`` (next offset to read per partition; default: the current
        position of every assigned partition) and wait for the coordinator's answer.

        A group member commits with its generation: CommitFailedError if the group has
        rebalanced since (the partitions may be someone else's now).

        ``asynchronous``: send the commit in the background and return at once (needs
        ``async with``); ``callback(offsets, error)`` runs at a later ``poll``, ``commit``
        or ``close`` once the answer is in (error None on success), as Kafka's
        ``commitAsync`` callbacks do. Commits complete in the order they were made."""
        group = self._require_group()
        await self._run_commit_callbacks()
        if offsets is None:
            offsets = self._current_offsets()
        if asynchronous:
            if self._nursery is None:
                raise RuntimeError("an asynchronous commit needs the consumer opened with "
                                   "`async with`, whose nursery sends it")
            previous, mine = self._commit_turn()
            self._spawn(self._commit_async, dict(offsets), callback, previous, mine)
            return
        await self._commit_now(group, offsets)

    def _commit_turn(self) -> tuple[trio.Event, trio.Event]:
        """(set when the previous asynchronous commit has finished, to set when this one
        has), so commits reach the coordinator in order."""
        previous, self._last_async_commit = self._last_async_commit, trio.Event()
        return previous, self._last_async_commit

    async def _commit_async(self, offsets: dict[TopicPartition, int],
                            callback: CommitCallback | None, previous: trio.Event,
                            done: trio.Event) -> None:
        error: BaseException | None = None
        try:
            await previous.wait()
            await self._commit_now(self._require_group(), offsets)
        except (KafkaError, *NO_ANSWER) as exc:
            error = exc
            if callback is None:
                logger.warning("asynchronous commit for group %s failed: %s",
                               self.config.group_id, exc)
        finally:
            done.set()
        if callback is not None:
            self._commit_results.append((callback, offsets, error))
            if self._group is not None:
                self._group.notify()

    async def _commit_now(self, group: GroupClient,
                          offsets: Mapping[TopicPartition, int]) -> None:
        if not offsets:
            return
        generation_id, member_id = -1, ""
        if self._subscribed:
            m = group.membership
            if m.generation_id < 0:
                raise CommitFailedError(ErrorCode.REBALANCE_IN_PROGRESS,
                                        "the consumer is not a member of a stable group "
                                        "generation; poll to rejoin")
            generation_id, member_id = m.generation_id, m.member_id
        await group.commit(dict(offsets), generation_id, member_id,
                           self.config.default_api_timeout_ms / 1000)
        self._on_committed(offsets)

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The group, generation and member id, for a transactional producer's
        ``send_offsets_to_transaction``."""
        group = self._require_group()
        m = group.membership
        return ConsumerGroupMetadata(self.config.group_id or "", m.generation_id, m.member_id,
                                     self.config.group_instance_id)

    async def committed(self, partitions: Iterable[TopicPartition]
                        ) -> dict[TopicPartition, int | None]:
        """The group's committed offset per partition (None where none is committed)."""
        group = self._require_group()
        return await group.fetch_committed(
            [(str(t), int(p)) for t, p in partitions], self.config.default_api_timeout_ms / 1000)

    def _require_group(self) -> GroupClient:
        if self._group is None:
            raise ValueError(NO_GROUP_ID)
        return self._group

    def _current_offsets(self) -> dict[TopicPartition, int]:
        out: dict[TopicPartition, int] = {}
        for tp in self._core.assignment:
            position = self._core.position(tp)
            if position is not None:
                out[tp] = position
        return out

    async def close(self) -> None:
        """Commit (with ``enable.auto.commit``), revoke and leave the group, then close."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._run_commit_callbacks()
            if self._group is not None and not self._subscribed and self.config.enable_auto_commit \
                    and self._core.assignment:
                assert self._driver is not None
                with trio.move_on_after(self.config.request_timeout_ms / 1000):
                    await self._driver.auto_commit()
            if self._subscribed and self._group is not None:
                with trio.move_on_after(self.config.request_timeout_ms / 1000):
                    try:
                        await self.unsubscribe()
                    except (KafkaError, *NO_ANSWER) as exc:
                        logger.warning("leaving group %s failed: %s", self.config.group_id, exc)
        finally:
            for scope in list(self._tasks):
                scope.cancel()
            # Shielded: a cancelled close (its caller's scope was cancelled) must still
            # close every connection; closing sockets does not wait on the network.
            with trio.CancelScope(shield=True):
                if self._group is not None:
                    await self._group.aclose()
                await self._pool.aclose()
            notify(self.config.interceptors, "close")

    # ---- internals ----

    async def _refresh_metadata(self) -> None:
        body = metadata_request(sorted(self._core.topics))
        try:
            response = await self._pool.request_any(ApiKey.METADATA, body,
                                                    self._core.cluster.brokers.values())
        except (KafkaConnectionError, KafkaError, ProtocolError) as exc:
            if self._pool.fatal_error is None:  # else poll raises it
                self._metadata_log.failed(exc)
            return
        self._metadata_log.succeeded()
        self._core.apply_metadata(response, monotonic_ms())

    def _step_manual_group(self) -> None:
        if self._group is not None and not self._subscribed and self._core.assignment:
            assert self._driver is not None
            self._driver.step_assigned()

    async def _update_positions(self) -> None:
        if self._core.metadata_due(monotonic_ms()):
            await self._refresh_metadata()
        if not self._core.missing_positions():
            return
        for node_id, body in self._core.list_offsets_requests().items():
            node = self._core.cluster.brokers[node_id]
            try:
                response = await self._pool.request(node, ApiKey.LIST_OFFSETS, body)
            except (KafkaConnectionError, ProtocolError) as exc:
                logger.debug("ListOffsets to broker %d failed: %s", node_id, exc)
                self._core.needs_metadata = True
                continue
            self._core.handle_list_offsets(response)

    def _send_fetches(self, max_wait_ms: int) -> None:
        """Start a Fetch in the background to each broker with none in flight."""
        if self._closed or self._nursery is None:
            return
        for node_id, body in self._core.fetch_requests(max_wait_ms).items():
            self._spawn(self._fetch, node_id, body)

    async def _fetch(self, node_id: int, body: dict[str, Any]) -> None:
        progressed = False
        try:
            node = self._core.cluster.brokers.get(node_id)
            if node is None:       # gone from the metadata since the request was built
                self._core.needs_metadata = True
                return
            response = await self._pool.request(node, ApiKey.FETCH, body)
            progressed = self._core.handle_fetch(body, response)
        except (KafkaConnectionError, ProtocolError) as exc:
            logger.debug("Fetch from broker %d failed: %s", node_id, exc)
            self._core.needs_metadata = True
            self._core.read_replicas.clear_node(node_id)
        except KafkaError as exc:
            self._core.add_error(exc)
        finally:
            self._core.fetch_finished(node_id)
            self._fetch_ended.set()
        if progressed:
            # Ask for the records after these while they wait to be handed out.
            self._send_fetches(self.config.fetch_max_wait_ms)
