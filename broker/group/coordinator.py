"""The group coordinator's I/O shell: owns the `GroupEngine`, loads and unloads
`__consumer_offsets` partitions through the coordinator runtime as this broker gains and
loses their leadership, performs the engine's writes through each partition's ordered
writer, parks JoinGroup/SyncGroup until their answer exists, and fires the engine's
deadlines from one timer task.
"""

from __future__ import annotations

import copy
import functools
import math
from typing import Any, Awaitable, Callable, Iterator

import trio

from broker.coordinator.loader import LoadSettings, Unreadable
from broker.coordinator.log import CoordinatorLog
from broker.coordinator.partitions import CoordinatorLocation
from broker.coordinator.runtime import CoordinatorRuntime
from broker.coordinator.topic import InternalTopicCreator
from broker.coordinator.writer import OrderedWriter, PendingWrite, finish
from broker.group.engine import GroupEngine, PartitionReplay
from broker.group.model import Effects, GroupCoordinatorSettings, GroupWrite, MembershipReply
from broker.group.offsets import CommitResult
from broker.group.records import build_batch, iter_log
from broker.group.responses import Outcome
from broker.group.routing import CONSUMER_OFFSETS_TOPIC
from broker.parking import parked
from clients.protocol.messages.heartbeat import HeartbeatRequestData
from clients.protocol.messages.join_group import JoinGroupRequestData, JoinGroupResponseData
from clients.protocol.messages.offset_commit import OffsetCommitRequestData
from clients.protocol.messages.sync_group import SyncGroupRequestData, SyncGroupResponseData
from clients.protocol.messages.txn_offset_commit import TxnOffsetCommitRequestData
from clients.clock import wall_clock_ms
from clients.protocol import ErrorCode
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage


class _Slot:
    """Where a parked request's answer lands."""

    __slots__ = ("event", "body")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.body: MembershipReply | None = None


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
        self.settings = settings
        self.engine = GroupEngine(settings, new_member_id)
        self._log = log
        self._image = image
        self._clock = clock
        self.runtime: CoordinatorRuntime[GroupWrite] = CoordinatorRuntime(
            broker_id, CONSUMER_OFFSETS_TOPIC, log, self, creator=topic_creator,
            writer_for=self._writer_for, load_settings=load_settings, caught_up=caught_up,
            clock=clock)
        # Transaction markers written while a partition loads: (producer id, committed).
        self._early_markers: dict[int, list[tuple[int, bool]]] = {}
        self._slots: dict[tuple[str, str, str], list[_Slot]] = {}
        self._changed = trio.Event()
        # Timers of other group protocols, run beside this coordinator's own.
        self.background: list[Callable[[], Awaitable[None]]] = []

    # -- lifecycle -----------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Timers, loads and writers until cancelled."""
        async with trio.open_nursery() as nursery:
            await nursery.start(self.runtime.run, self._image())
            nursery.start_soon(self._timer)
            for task in self.background:
                nursery.start_soon(task)
            task_status.started()

    async def on_metadata(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """Load partitions this broker now leads; unload those it no longer leads."""
        self.reconcile(image)

    def reconcile(self, image: MetadataImage) -> None:
        """Load the partitions this broker leads in `image`; unload the others."""
        self.runtime.reconcile(image)

    # -- the state machine the runtime loads (CoordinatorStateMachine) --------------------

    def decode(self, chunk: bytes, unreadable: Unreadable) -> Iterator[Any]:
        return iter_log(chunk, unreadable)

    def new_replay(self, partition: int) -> PartitionReplay:
        return PartitionReplay()

    def install(self, partition: int, epoch: int, replay: PartitionReplay) -> str:
        count = self.engine.install(partition, replay, self._clock())
        for producer_id, committed in self._early_markers.pop(partition, ()):
            self.engine.complete_txn(partition, producer_id, committed)
        self._changed.set()
        return f"{count} group(s) from {replay.records} record(s)"

    def unload(self, partition: int, loaded: bool) -> None:
        self._early_markers.pop(partition, None)
        if loaded:
            self._apply(self.engine.unload(partition))

    def _writer_for(self, partition: int) -> OrderedWriter[GroupWrite]:
        return OrderedWriter(CONSUMER_OFFSETS_TOPIC, partition, self._log,
                             functools.partial(self._encode, partition), self._settle)

    # -- ownership -----------------------------------------------------------------------

    def coordinator_error(self, group_id: str) -> int:
        """NONE when this broker serves `group_id`, else why not."""
        return self.runtime.error(self.engine.partition_for(group_id))

    @property
    def is_loading(self) -> bool:
        return self.runtime.is_loading

    def find_coordinator(self, key: str, listener_name: str) -> CoordinatorLocation:
        """Node id, host and port of `key`'s coordinator on `listener_name`, or an error."""
        return self.runtime.find_coordinator(self._image(), self.engine.partition_for(key),
                                             listener_name)

    # -- effects -------------------------------------------------------------------------

    def _apply(self, effects: Effects) -> None:
        for reply in effects.replies:
            for slot in self._slots.pop((reply.group_id, reply.member_id, reply.kind), ()):
                # Each waiting request gets its own copy: its handler writes the fields that
                # depend on its version, and quota enforcement its throttle time, into it.
                slot.body = copy.copy(reply.body)
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
        writer = self.runtime.writer(write.partition)
        if writer is None:
            item = PendingWrite(write)
            finish(item, ErrorCode.NOT_COORDINATOR, self._settle)
            return item
        return writer.submit(write)

    async def write(self, write: GroupWrite) -> PendingWrite[GroupWrite]:
        """Queue `write` on its partition and wait until it is settled."""
        writer = self.runtime.writer(write.partition)
        if writer is None:
            return self.submit(write)
        return await writer.write(write)

    async def answer(self, group_id: str, kind: str, outcome: Outcome, effects: Effects
                     ) -> MembershipReply:
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

    async def join_group(self, request: JoinGroupRequestData, *, client_id: str, client_host: str,
                         require_known_member_id: bool) -> JoinGroupResponseData:
        outcome, effects = self.engine.join(request, client_id=client_id,
                                            client_host=client_host,
                                            require_known_member_id=require_known_member_id,
                                            now_ms=self._clock())
        reply = await self.answer(request.group_id, "join", outcome, effects)
        assert isinstance(reply, JoinGroupResponseData)
        return reply

    async def sync_group(self, request: SyncGroupRequestData) -> SyncGroupResponseData:
        outcome, effects = self.engine.sync(request, self._clock())
        reply = await self.answer(request.group_id, "sync", outcome, effects)
        assert isinstance(reply, SyncGroupResponseData)
        return reply

    def heartbeat(self, request: HeartbeatRequestData) -> int:
        code = self.engine.heartbeat(request, self._clock())
        self._changed.set()
        return code

    def leave_group(self, group_id: str, members: list[tuple[str, str | None]]
                    ) -> tuple[int, list[int]]:
        top, codes, effects = self.engine.leave(group_id, members, self._clock())
        self._apply(effects)
        return top, codes

    async def commit_offsets(self, request: OffsetCommitRequestData,
                             topic_exists: Callable[[str], bool] | None = None) -> CommitResult:
        # A commit only pushes its member's session deadline later (it counts as a
        # heartbeat): the timer, due no later than before, need not look again.
        result = self.engine.commit(request, self._clock(), topic_exists)
        if result.write is not None:
            await self.write(result.write)
        return result

    async def commit_txn_offsets(self, request: TxnOffsetCommitRequestData,
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
        if self.runtime.epoch(partition) is not None:
            self.engine.complete_txn(partition, producer_id, committed)
            self._changed.set()
        elif self.runtime.is_loading_partition(partition):
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
