"""The group coordinator runtime: owns the `GroupEngine`, loads and unloads
`__consumer_offsets` partitions as this broker gains and loses their leadership, performs
the engine's writes, parks JoinGroup/SyncGroup until their answer exists, and fires the
engine's deadlines from one timer task.
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import trio

from broker.coordinator.topic import InternalTopicCreator
from broker.coordinator.partitions import led_partitions, locate_coordinator
from broker.group.engine import GroupEngine, PartitionReplay
from broker.group.model import Effects, GroupCoordinatorSettings, GroupWrite
from broker.group.offsets import CommitResult
from broker.coordinator.log import CoordinatorLog, CoordinatorLogError
from broker.coordinator.writer import OrderedWriter, PendingWrite, finish
from broker.group.records import OffsetsRecordError, build_batch, iter_log
from broker.group.responses import Outcome
from broker.group.routing import CONSUMER_OFFSETS_TOPIC
from broker.parking import parked
from clients.protocol import ErrorCode
from clients.records.errors import RecordsError
from clients.clock import wall_clock_ms
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadSettings:
    """How an offsets partition is loaded. A read that fails (most often: the replica manager
    does not lead the partition yet) is retried after `retry_s`, doubling up to
    `max_retry_s`, `attempts` times; then the failure is logged as an error, the partition
    answers COORDINATOR_NOT_AVAILABLE, and loading starts over after `give_up_s`. Every
    `records_per_yield` records, loading lets the other tasks run."""

    retry_s: float = 0.1
    max_retry_s: float = 2.0
    attempts: int = 20
    give_up_s: float = 30.0
    records_per_yield: int = 2000

    def retry_delay(self, attempt: int) -> float:
        return min(self.retry_s * 2 ** attempt, self.max_retry_s)


class _Slot:
    """Where a parked request's answer lands."""

    __slots__ = ("event", "body")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.body: dict[str, Any] | None = None


class GroupCoordinator:
    """Coordinator for the groups whose `__consumer_offsets` partition this broker leads."""

    def __init__(self, broker_id: int, settings: GroupCoordinatorSettings, log: CoordinatorLog, *,
                 image: Callable[[], MetadataImage],
                 topic_creator: InternalTopicCreator | None = None,
                 clock: Callable[[], int] = wall_clock_ms,
                 new_member_id: Callable[[str], str] | None = None,
                 load_settings: LoadSettings = LoadSettings(),
                 caught_up: Callable[[], bool] = lambda: True) -> None:
        self.broker_id = broker_id
        self._caught_up = caught_up
        self.settings = settings
        self.load_settings = load_settings
        self.engine = GroupEngine(settings, new_member_id)
        self._log = log
        self._image = image
        self._topic_creator = topic_creator
        self._clock = clock
        # Partition -> the leader epoch it is (being) loaded at. A partition is in at most
        # one of these: loaded, loading, or waiting to start over after a failed load.
        self._loaded: dict[int, int] = {}
        self._loading: dict[int, int] = {}
        self._failed: dict[int, int] = {}
        self._writers: dict[int, OrderedWriter[GroupWrite]] = {}
        # Transaction markers written while a partition loads: (producer id, committed).
        self._early_markers: dict[int, list[tuple[int, bool]]] = {}
        self._slots: dict[tuple[str, str, str], list[_Slot]] = {}
        self._changed = trio.Event()
        self._nursery: trio.Nursery | None = None
        # Timers of other group protocols, run beside this coordinator's own.
        self.background: list[Callable[[], Awaitable[None]]] = []

    # -- lifecycle -----------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Timers, loads and writers until cancelled."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._timer)
                for task in self.background:
                    nursery.start_soon(task)
                self.reconcile(self._image())
                task_status.started()
                await trio.sleep_forever()
        finally:
            self._nursery = None
            for partition in [*self._loaded, *self._loading, *self._failed]:
                self._unload(partition)

    async def on_metadata(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """Load partitions this broker now leads; unload those it no longer leads."""
        self.reconcile(image)

    def reconcile(self, image: MetadataImage) -> None:
        """Load the partitions this broker leads in `image`; unload the others."""
        led = led_partitions(image, CONSUMER_OFFSETS_TOPIC, self.broker_id, self._caught_up())
        for partition, epoch in [*self._loaded.items(), *self._loading.items(),
                                 *self._failed.items()]:
            if led.get(partition) != epoch:
                self._unload(partition)
        if self._nursery is None:
            return
        for partition, epoch in led.items():
            if (partition not in self._loaded and partition not in self._loading
                    and partition not in self._failed):
                self._loading[partition] = epoch
                self._nursery.start_soon(self._load, partition, epoch)

    async def _load(self, partition: int, epoch: int) -> None:
        """Load `partition` as leader at `epoch`, retrying while it cannot be read, until it
        is loaded or this broker stops leading it at that epoch."""
        settings = self.load_settings
        while True:
            failure: Exception | None = None
            for attempt in range(settings.attempts):
                if self._loading.get(partition) != epoch:
                    return
                started = self._clock()
                try:
                    replay = await self._replay(partition, epoch)
                except (CoordinatorLogError, RecordsError) as exc:
                    failure = exc
                    # Expected while the replica manager catches up; damaged data is not.
                    level = logging.DEBUG if isinstance(exc, CoordinatorLogError) else logging.WARNING
                    logger.log(level, "__consumer_offsets-%d: load attempt %d failed: %s",
                               partition, attempt + 1, exc)
                    await trio.sleep(settings.retry_delay(attempt))
                    continue
                if replay is not None:
                    self._finish_load(partition, epoch, replay, started)
                return
            if self._loading.get(partition) != epoch:
                return
            # Not forever NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS: say why, and try
            # again later even if no metadata change comes to start a new load.
            logger.error("__consumer_offsets-%d: gave up loading after %d attempts (%s); "
                         "its groups are unavailable, trying again in %g s", partition,
                         settings.attempts, failure, settings.give_up_s)
            del self._loading[partition]
            self._failed[partition] = epoch
            await trio.sleep(settings.give_up_s)
            if self._failed.get(partition) != epoch:
                return
            del self._failed[partition]
            self._loading[partition] = epoch

    async def _replay(self, partition: int, epoch: int) -> PartitionReplay | None:
        """Every record of `partition`, replayed a slice at a time with a checkpoint after
        each, so a large partition does not stall the broker; None if the partition stopped
        loading at `epoch` meanwhile. A record that cannot be decoded is logged and skipped:
        one bad record must not keep every group of the partition unavailable."""
        replay = PartitionReplay()
        skipped = 0

        def unreadable(offset: int, error: OffsetsRecordError) -> None:
            nonlocal skipped
            skipped += 1
            logger.error("__consumer_offsets-%d: skipping the unreadable record at offset %d: "
                         "%s", partition, offset, error)

        for chunk in self._log.read_from(partition, self._log.log_start_offset(partition)):
            entries = iter_log(chunk, unreadable)
            while True:
                part = list(itertools.islice(entries, self.load_settings.records_per_yield))
                if not part:
                    break
                replay.apply(part)
                await trio.sleep(0)
                if self._loading.get(partition) != epoch:
                    return None
            await trio.sleep(0)
            if self._loading.get(partition) != epoch:
                return None
        if skipped:
            logger.error("__consumer_offsets-%d: %d unreadable record(s) skipped; the groups "
                         "and offsets they held are missing", partition, skipped)
        return replay

    def _finish_load(self, partition: int, epoch: int, replay: PartitionReplay,
                     started: int) -> None:
        count = self.engine.install(partition, replay, self._clock())
        for producer_id, committed in self._early_markers.pop(partition, ()):
            self.engine.complete_txn(partition, producer_id, committed)
        del self._loading[partition]
        self._loaded[partition] = epoch
        writer = OrderedWriter(CONSUMER_OFFSETS_TOPIC, partition, self._log,
                               functools.partial(self._encode, partition), self._settle)
        self._writers[partition] = writer
        assert self._nursery is not None
        self._nursery.start_soon(writer.run)
        self._changed.set()
        logger.info("__consumer_offsets-%d loaded at epoch %d: %d group(s) from %d "
                    "record(s) in %d ms", partition, epoch, count, replay.records,
                    self._clock() - started)

    def _unload(self, partition: int) -> None:
        self._loading.pop(partition, None)
        self._early_markers.pop(partition, None)
        self._failed.pop(partition, None)
        if self._loaded.pop(partition, None) is None:
            return
        writer = self._writers.pop(partition, None)
        if writer is not None:
            writer.close()
        self._apply(self.engine.unload(partition))
        logger.info("__consumer_offsets-%d unloaded", partition)

    # -- ownership -----------------------------------------------------------------------

    def coordinator_error(self, group_id: str) -> int:
        """NONE when this broker serves `group_id`, else why not."""
        partition = self.engine.partition_for(group_id)
        if partition in self._loaded:
            return ErrorCode.NONE
        if partition in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if partition in self._failed:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE  # this broker leads it, but cannot load it
        return ErrorCode.NOT_COORDINATOR

    @property
    def is_loading(self) -> bool:
        return bool(self._loading)

    def find_coordinator(self, key: str, listener_name: str) -> dict[str, Any]:
        """Node id, host and port of `key`'s coordinator on `listener_name`, or an error."""
        return locate_coordinator(self._image(), CONSUMER_OFFSETS_TOPIC, self.engine.partition_for(key),
                                  listener_name, self._topic_creator, self._nursery)

    # -- effects -------------------------------------------------------------------------

    def _apply(self, effects: Effects) -> None:
        for reply in effects.replies:
            for slot in self._slots.pop((reply.group_id, reply.member_id, reply.kind), ()):
                slot.body = dict(reply.body)
                slot.event.set()
        for write in effects.writes:
            self.submit(write)
        self._changed.set()

    def _encode(self, partition: int, write: GroupWrite) -> bytes:
        """`write`'s record batch; a transactional offset commit carries the producer's next
        sequence number, so the leader's sequence check accepts it."""
        sequence = 0
        if write.producer is not None:
            sequence = self._log.next_sequence(partition, *write.producer)
        return build_batch(write.entries, wall_clock_ms(), write.producer, sequence)

    def _settle(self, write: GroupWrite, code: int) -> None:
        """Run what follows `write` once it is committed or failed."""
        if write.then is not None:
            effects = write.then(code)
            if effects.replies or effects.writes or write.reschedules:
                self._apply(effects)

    def submit(self, write: GroupWrite) -> PendingWrite[GroupWrite]:
        """Queue `write` on its partition (NOT_COORDINATOR at once if not loaded)."""
        writer = self._writers.get(write.partition)
        if writer is None:
            item = PendingWrite(write)
            finish(item, ErrorCode.NOT_COORDINATOR, self._settle)
            return item
        return writer.submit(write)

    async def write(self, write: GroupWrite) -> PendingWrite[GroupWrite]:
        """Queue `write` on its partition and wait until it is settled."""
        writer = self._writers.get(write.partition)
        if writer is None:
            return self.submit(write)
        return await writer.write(write)

    async def answer(self, group_id: str, kind: str, outcome: Outcome, effects: Effects
                     ) -> dict[str, Any]:
        """The body for an engine outcome, waiting for it when the request was parked."""
        if outcome.parked is None:
            self._apply(effects)
            assert outcome.body is not None
            return outcome.body
        key = (group_id, outcome.parked, kind)
        slot = _Slot()
        self._slots.setdefault(key, []).append(slot)
        try:
            self._apply(effects)
            parked()  # waiting for the group (a rebalance), as in Kafka's purgatory
            await slot.event.wait()
        finally:
            waiting = self._slots.get(key)
            if waiting is not None and slot in waiting:
                waiting.remove(slot)
                if not waiting:
                    del self._slots[key]
        assert slot.body is not None
        return slot.body

    # -- operations the handlers call ----------------------------------------------------

    async def join_group(self, request: dict[str, Any], *, client_id: str, client_host: str,
                         require_known_member_id: bool) -> dict[str, Any]:
        outcome, effects = self.engine.join(request, client_id=client_id,
                                            client_host=client_host,
                                            require_known_member_id=require_known_member_id,
                                            now_ms=self._clock())
        return await self.answer(request.get("group_id") or "", "join", outcome, effects)

    async def sync_group(self, request: dict[str, Any]) -> dict[str, Any]:
        outcome, effects = self.engine.sync(request, self._clock())
        return await self.answer(request.get("group_id") or "", "sync", outcome, effects)

    def heartbeat(self, request: dict[str, Any]) -> int:
        code = self.engine.heartbeat(request, self._clock())
        self._changed.set()
        return code

    def leave_group(self, group_id: str, members: list[tuple[str, str | None]]
                    ) -> tuple[int, list[int]]:
        top, codes, effects = self.engine.leave(group_id, members, self._clock())
        self._apply(effects)
        return top, codes

    async def commit_offsets(self, request: dict[str, Any],
                             topic_exists: Callable[[str], bool] | None = None) -> CommitResult:
        # A commit only pushes its member's session deadline later (it counts as a
        # heartbeat): the timer, due no later than before, need not look again.
        result = self.engine.commit(request, self._clock(), topic_exists)
        if result.write is not None:
            await self.write(result.write)
        return result

    async def commit_txn_offsets(self, request: dict[str, Any],
                                 topic_exists: Callable[[str], bool] | None = None
                                 ) -> CommitResult:
        """TxnOffsetCommit: written in the producer's transaction, pending until its marker."""
        result = self.engine.commit_txn(request, self._clock(), topic_exists)
        if result.write is not None:
            await self.write(result.write)
        return result

    def on_offsets_marker(self, partition: int, producer_id: int, committed: bool) -> None:
        """A transaction marker was written to `__consumer_offsets-<partition>`: the
        producer's pending transactional offsets there become visible or are dropped."""
        if partition in self._loaded:
            self.engine.complete_txn(partition, producer_id, committed)
            self._changed.set()
        elif partition in self._loading:
            # The load may have read the log before this marker: applied again once it is
            # done (a marker the replay saw finds nothing pending).
            self._early_markers.setdefault(partition, []).append((producer_id, committed))

    async def delete_group(self, group_id: str) -> int:
        code, write = self.engine.delete(group_id, self._clock())
        if write is not None:
            await self.write(write)
        return code

    async def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]
                             ) -> tuple[int, dict[tuple[str, int], int]]:
        """OffsetDelete: the group's error and each partition's, once the tombstones are
        written."""
        code, codes, write = self.engine.delete_offsets(group_id, partitions)
        if write is not None:
            await self.write(write)
        return code, codes

    # -- timers --------------------------------------------------------------------------

    async def _timer(self) -> None:
        interval = self.settings.offsets_retention_check_interval_ms
        next_expiry = self._clock() + interval
        while True:
            now = self._clock()
            self._changed = trio.Event()
            effects = self.engine.tick(now)
            if now >= next_expiry:
                effects.extend(self.engine.expire_offsets(now))
                next_expiry = now + interval
            self._apply(effects)
            self._changed = trio.Event()
            deadline = min(self.engine.next_deadline() or math.inf, next_expiry)
            with trio.move_on_after(max(deadline - self._clock(), 0) / 1000):
                await self._changed.wait()
