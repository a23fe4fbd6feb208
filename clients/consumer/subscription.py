"""What a subscribed consumer does in ``poll``: revoke and take on assignments (with the
rebalance listeners), auto-commit, look up committed offsets, and watch the subscribed
topics' metadata; and the part of that a consumer with ``assign()`` and ``group.id`` needs. Work that may wait on an unavailable coordinator runs in background tasks
the consumer spawns, so ``poll`` keeps to its timeout.
"""

from __future__ import annotations

import inspect
import logging
import math
from typing import Awaitable, Callable, Union

import trio

from clients.common.cluster import ClusterMetadata, metadata_request
from clients.clock import monotonic_ms
from clients.common.connections import TrioConnectionPool
from clients.consumer.config import ConsumerConfig
from clients.consumer.core import ConsumerCore, TopicPartition
from clients.consumer.group.trio_group import GroupClient
from clients.net import NO_ANSWER
from clients.protocol import ApiKey, ErrorCode, KafkaError

logger = logging.getLogger(__name__)

# A rebalance listener gets the partitions; it may be a plain or an async function.
Listener = Callable[[list[TopicPartition]], Union[None, Awaitable[None]]]


class SubscriptionDriver:
    """The group side of a subscribed consumer's ``poll``, over the consumer's own state."""

    def __init__(self, config: ConsumerConfig, core: ConsumerCore, group: GroupClient,
                 pool: TrioConnectionPool,
                 spawn: Callable[..., trio.CancelScope],
                 commit: Callable[[], Awaitable[None]],
                 current_offsets: Callable[[], dict[TopicPartition, int]]) -> None:
        self.config = config
        self.core = core
        self.group = group
        self.pool = pool
        self.spawn = spawn
        self.commit = commit
        self.current_offsets = current_offsets
        self.on_assign: Listener | None = None
        self.on_revoke: Listener | None = None
        self.on_lost: Listener | None = None     # None: on_revoke gets lost partitions too
        # Told the offsets of every successful background auto-commit (interceptors).
        self.on_committed: Callable[[dict[TopicPartition, int]], None] | None = None
        self.next_metadata_watch = math.inf
        self._next_auto_commit = math.inf
        self._auto_commit_done: trio.Event | None = None   # the auto-commit in flight
        # The committed-offset lookup for a pending assignment: which one, and its result
        # (None while in flight) or the error that ended it.
        self._lookup_for: list[TopicPartition] | None = None
        self._looked_up: dict[TopicPartition, int | None] | None = None
        self._lookup_error: KafkaError | None = None
        self._watching_metadata = False

    async def step(self) -> None:
        group = self.group
        m = group.membership
        m.on_poll(monotonic_ms())
        group.wake()
        if m.fatal_error is not None:
            raise m.fatal_error
        self._maybe_watch_metadata()
        revoking = m.partitions_to_revoke()
        if revoking is not None:
            if set(revoking) >= set(m.owned):
                await self.revoke_all()
            else:
                await self.revoke(revoking)
            group.wake()
        pending = m.pending_assignment
        if pending is not None:
            # Positions of new partitions come from committed offsets; only then is the
            # assignment taken, so a failed OffsetFetch is retried rather than reset by
            # policy. Partitions kept (cooperative rebalancing) keep their positions.
            added = m.pending_added
            committed = self._committed_for(added) if added else {}
            if committed is None:
                return
            m.take_assignment()
            group.wake()    # the consumer protocol acknowledges the assignment at once
            self.core.assign(pending)
            for tp, offset in committed.items():
                if offset is not None:
                    self.core.seek(tp, offset)
            self.start_auto_commit_clock()
            await self._call_listener(self.on_assign, list(added))
        elif self.config.enable_auto_commit and trio.current_time() >= self._next_auto_commit:
            self._start_auto_commit()

    def step_assigned(self) -> None:
        """``poll``'s group work for ``assign()`` with ``group.id`` (no membership, as in
        Kafka): newly assigned partitions start at the committed offsets, looked up in the
        background, and auto-commits run outside any generation."""
        awaiting = self.core.awaiting_committed
        if awaiting:
            # The same lookup while the same partitions wait; a new one when they change.
            lookup = self._lookup_for
            pending = lookup if lookup is not None and set(lookup) == set(awaiting) else awaiting
            committed = self._committed_for(pending)
            if committed is not None:
                self._lookup_for = self._looked_up = None
                self.core.apply_committed(committed)
        if self.config.enable_auto_commit and trio.current_time() >= self._next_auto_commit:
            self._start_auto_commit(manual=True)

    def start_auto_commit_clock(self) -> None:
        """The first auto-commit comes ``auto.commit.interval.ms`` from now."""
        self._next_auto_commit = trio.current_time() + self.config.auto_commit_interval_ms / 1000

    def _committed_for(self, pending: list[TopicPartition]
                       ) -> dict[TopicPartition, int | None] | None:
        """The committed offsets of ``pending``; None while they are looked up (in the
        background, so ``poll`` keeps to its timeout; its end wakes ``poll``)."""
        if self._lookup_error is not None:
            error, self._lookup_error = self._lookup_error, None
            raise error
        if self._lookup_for is pending:
            return self._looked_up
        self._lookup_for, self._looked_up = pending, None
        self.spawn(self._look_up_committed, pending)
        return None

    async def _look_up_committed(self, pending: list[TopicPartition]) -> None:
        try:
            committed = await self.group.fetch_committed(
                pending, self.config.default_api_timeout_ms / 1000)
        except (KafkaError, *NO_ANSWER) as exc:
            if self._lookup_for is pending:
                self._lookup_for = None         # looked up again at the next poll
                if isinstance(exc, KafkaError) and not exc.code.retriable:
                    self._lookup_error = exc
                else:
                    logger.warning("group %s: reading committed offsets failed (%s); "
                                   "retrying", self.config.group_id, exc)
            return
        finally:
            self.group.notify()
        if self._lookup_for is pending:
            self._looked_up = committed

    def _start_auto_commit(self, *, manual: bool = False) -> None:
        """Commit the positions in the background (one commit at a time), as Kafka's
        consumer auto-commits asynchronously from ``poll``: with the member's generation,
        or outside any (``manual``: partitions from ``assign``)."""
        m = self.group.membership
        self.start_auto_commit_clock()
        offsets = self.current_offsets()
        generation_id, member_id = (-1, "") if manual else (m.generation_id, m.member_id)
        if self._auto_commit_done is not None or not offsets or (not manual and generation_id < 0):
            return
        done = self._auto_commit_done = trio.Event()
        self.spawn(self._commit_in_background, offsets, generation_id, member_id, done)

    async def _commit_in_background(self, offsets: dict[TopicPartition, int],
                                     generation_id: int, member_id: str,
                                     done: trio.Event) -> None:
        try:
            await self.group.commit(offsets, generation_id, member_id,
                                     self.config.default_api_timeout_ms / 1000)
            if self.on_committed is not None:
                self.on_committed(offsets)
        except (KafkaError, *NO_ANSWER) as exc:
            logger.warning("auto-commit for group %s failed: %s", self.config.group_id, exc)
        finally:
            self._auto_commit_done = None
            done.set()

    async def auto_commit(self) -> None:
        """Commit the positions now (before revoking or closing), after any auto-commit in
        flight so an older commit cannot land last."""
        if self._auto_commit_done is not None:
            await self._auto_commit_done.wait()
        self.start_auto_commit_clock()
        try:
            await self.commit()
        except (KafkaError, *NO_ANSWER) as exc:
            logger.warning("auto-commit for group %s failed: %s", self.config.group_id, exc)

    async def revoke(self, partitions: list[TopicPartition]) -> None:
        """Cooperative rebalancing: commit and give up only ``partitions`` (those the
        new assignment moved elsewhere); the member then joins again."""
        m = self.group.membership
        try:
            if self.config.enable_auto_commit and m.generation_id >= 0:
                await self.auto_commit()
            await self._call_listener(self.on_revoke, partitions)
        finally:
            gone = set(partitions)
            self.core.assign([tp for tp in self.core.assignment if tp not in gone])
            m.revoked(partitions)

    async def revoke_all(self) -> None:
        """Eager rebalancing: commit (unless the partitions were lost) and tell the
        listener while the partitions and the generation are still this member's; only
        then clear the assignment, which lets the member rejoin."""
        m = self.group.membership
        owned = list(m.owned)
        try:
            if owned and self.config.enable_auto_commit and not m.partitions_lost \
                    and m.generation_id >= 0:
                await self.auto_commit()
            if owned:
                lost = m.partitions_lost and self.on_lost is not None
                await self._call_listener(self.on_lost if lost else self.on_revoke, owned)
        finally:
            # Even when the listener raises: the revocation completes, and its error
            # reaches the caller afterwards (as in Kafka).
            self.core.assign([])
            m.revoked()
            self._lookup_for = self._looked_up = None

    def _maybe_watch_metadata(self) -> None:
        if self._watching_metadata or trio.current_time() < self.next_metadata_watch:
            return
        self._watching_metadata = True
        self.next_metadata_watch = trio.current_time() + \
            self.config.metadata_max_age_ms / 1000
        self.spawn(self._watch_metadata)

    async def _watch_metadata(self) -> None:
        """Refresh the subscribed topics' metadata; the membership rebalances when their
        partition counts no longer match the assignment (a topic appeared or grew)."""
        m = self.group.membership
        topics = m.watched_topics()
        try:
            response = await self.pool.request_any(ApiKey.METADATA, metadata_request(topics),
                                                    self.core.cluster.brokers.values())
        except (KafkaError, *NO_ANSWER) as exc:
            logger.debug("metadata refresh for group %s failed: %s", self.config.group_id, exc)
            return
        finally:
            self._watching_metadata = False
        self.core.apply_metadata(response, monotonic_ms())
        fresh = ClusterMetadata.from_response(response)
        counts: dict[str, int | None] = {}
        for topic in topics:
            error = fresh.topic_error(topic)
            if error is None:
                counts[topic] = fresh.partition_count(topic)
            elif error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                counts[topic] = None
            # Any other error is likely passing: that topic is compared next time.
        m.metadata_update(counts)
        if m.rejoin_needed:
            self.group.wake()
            self.group.notify()

    async def _call_listener(self, listener: Listener | None,
                             partitions: list[TopicPartition]) -> None:
        if listener is None:
            return
        result = listener(partitions)
        if inspect.isawaitable(result):
            await result
