"""The trio consumer: ``async with Consumer(config) as consumer: ...``.

``poll`` returns buffered records, or fetches from every assigned partition's leader at
once (one Fetch per broker) until records arrive or the timeout passes. Partitions come
from ``assign`` or, with ``group.id``, from ``subscribe``: then a background task in the
consumer's own nursery keeps the membership alive (heartbeats) between polls, while
revoking, taking on an assignment and rebalance listeners happen in ``poll``, as in Kafka's
consumer. Work that may wait on an unavailable coordinator (periodic auto-commits, the
committed offsets of a new assignment, watching the subscribed topics' metadata) runs in
background tasks of that nursery, so ``poll`` keeps to its timeout.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Awaitable, Callable, Iterable, Mapping

import trio

from clients.admin.cluster import metadata_request
from clients.admin.connections import TrioConnectionPool
from clients.consumer.config import ConsumerConfig
from clients.consumer.core import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ConsumerCore,
    TopicPartition,
)
from clients.consumer.group.assignors import make_assignors
from clients.consumer.group.membership import GroupMembership, GroupSettings
from clients.consumer.group.offsets import CommitFailedError
from clients.consumer.group.trio_group import GroupClient
from clients.consumer.records import ConsumerRecord
from clients.consumer.subscription import Listener, SubscriptionDriver
from clients.net import NO_ANSWER, KafkaConnectionError
from clients.net.failure_log import RepeatedFailureLog
from clients.producer.core import now_ms
from clients.protocol import ApiKey, ErrorCode, KafkaError, ProtocolError

logger = logging.getLogger(__name__)

NO_GROUP_ID = "subscribe and commits need group.id in the consumer configuration"
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
                                        config.request_timeout_ms / 1000)
        self._metadata_log = RepeatedFailureLog(logger, "metadata refresh")
        self._group: GroupClient | None = None
        if config.group_id is not None:
            settings = GroupSettings(
                group_id=config.group_id, session_timeout_ms=config.session_timeout_ms,
                rebalance_timeout_ms=config.max_poll_interval_ms,
                heartbeat_interval_ms=config.heartbeat_interval_ms,
                retry_backoff_ms=config.retry_backoff_ms,
                request_timeout_ms=config.request_timeout_ms,
                group_instance_id=config.group_instance_id)
            membership = GroupMembership(settings,
                                         make_assignors(config.partition_assignment_strategy))
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

    def subscribe(self, topics: Iterable[str], on_assign: Listener | None = None,
                  on_revoke: Listener | None = None) -> None:
        """Join ``group.id`` and consume the partitions the group assigns from ``topics``.

        Listeners run inside ``poll`` (and ``unsubscribe``/``close``). ``on_revoke(partitions)``
        runs before the partitions are given up and before the member rejoins (after the
        auto-commit), so it may still ``commit()`` and read ``position()`` for them under
        the old generation. ``on_assign(partitions)`` runs once new ones are taken on
        (positions come from the committed offsets, else ``auto.offset.reset``). Needs
        ``async with``.
        """
        if self._group is None:
            raise ValueError(NO_GROUP_ID)
        if self._core.assignment and not self._subscribed:
            raise ValueError(MIXED)
        if self._nursery is None:
            raise RuntimeError("subscribe needs the consumer opened with `async with`, "
                               "whose nursery runs the heartbeats")
        names = [topics] if isinstance(topics, str) else list(topics)
        if not names:
            raise ValueError("subscribe needs at least one topic; use unsubscribe() to stop")
        driver = self._driver
        assert driver is not None
        driver.on_assign, driver.on_revoke = on_assign, on_revoke
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
            if self._core.position(tp) is None:
                await trio.sleep(self.config.retry_backoff_ms / 1000)
        return position

    async def partitions_for(self, topic: str) -> list[int]:
        """The topic's partition ids from fresh metadata; KafkaError if it does not exist."""
        response = await self._pool.request_any(ApiKey.METADATA, metadata_request([topic]),
                                                self._core.cluster.brokers.values())
        self._core.apply_metadata(response, now_ms())
        error = self._core.cluster.topic_error(topic)
        if error is not None:
            raise KafkaError(error, f"topic {topic!r}: {error.message}")
        return sorted(self._core.cluster.topics[topic].partitions)

    # ---- polling ----

    async def poll(self, timeout_ms: float = 0, max_records: int | None = None
                   ) -> list[ConsumerRecord]:
        """Records from the assigned partitions, at most ``max_records`` (default
        ``max.poll.records``); an empty list once ``timeout_ms`` passes without any.

        A group member also rebalances and auto-commits here (see ``subscribe``)."""
        limit = max_records or self.config.max_poll_records
        deadline = trio.current_time() + max(timeout_ms, 0) / 1000
        while True:
            self._core.raise_errors()
            if self._subscribed:
                assert self._driver is not None
                await self._driver.step()
            records = self._core.drain(limit)
            if records:
                return records
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
            remaining_ms = max((deadline - trio.current_time()) * 1000, 0)
            requests = self._core.fetch_requests(
                int(min(self.config.fetch_max_wait_ms, math.floor(remaining_ms))))
            if requests:
                async with trio.open_nursery() as nursery:
                    for node_id, body in requests.items():
                        nursery.start_soon(self._fetch, node_id, body)
            elif remaining_ms > 0:
                await trio.sleep(min(self.config.retry_backoff_ms, remaining_ms) / 1000)
            if trio.current_time() >= deadline and not self._core.has_buffered():
                self._core.raise_errors()
                return []

    # ---- offsets ----

    async def commit(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        """Commit ``offsets`` (next offset to read per partition; default: the current
        position of every assigned partition) and wait for the coordinator's answer.

        A group member commits with its generation: CommitFailedError if the group has
        rebalanced since (the partitions may be someone else's now)."""
        group = self._require_group()
        if offsets is None:
            offsets = self._current_offsets()
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

    # ---- internals ----

    async def _refresh_metadata(self) -> None:
        body = metadata_request(sorted(self._core.topics))
        try:
            response = await self._pool.request_any(ApiKey.METADATA, body,
                                                    self._core.cluster.brokers.values())
        except (KafkaConnectionError, KafkaError, ProtocolError) as exc:
            self._metadata_log.failed(exc)
            return
        self._metadata_log.succeeded()
        self._core.apply_metadata(response, now_ms())

    def _step_manual_group(self) -> None:
        if self._group is not None and not self._subscribed and self._core.assignment:
            assert self._driver is not None
            self._driver.step_assigned()

    async def _update_positions(self) -> None:
        if self._core.metadata_due(now_ms()):
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

    async def _fetch(self, node_id: int, body: dict[str, Any]) -> None:
        node = self._core.cluster.brokers[node_id]
        try:
            response = await self._pool.request(node, ApiKey.FETCH, body)
        except (KafkaConnectionError, ProtocolError) as exc:
            logger.debug("Fetch from broker %d failed: %s", node_id, exc)
            self._core.needs_metadata = True
            return
        self._core.handle_fetch(body, response)
