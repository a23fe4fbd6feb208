"""The runtime of one coordinator over its compacted internal topic (Kafka's
CoordinatorRuntime): which partitions this broker serves, loading each when this broker
becomes its leader and unloading it when the leadership goes (the leader epoch is the
coordinator epoch), an ordered writer per loaded partition for the coordinators that want
one, and where a key's coordinator is.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any, Callable, Generic, TypeVar

import trio

from broker.coordinator.loader import CoordinatorStateMachine, LoadSettings, replay_partition
from broker.coordinator.log import CoordinatorLog, CoordinatorLogError
from broker.coordinator.partitions import CoordinatorLocation, led_partitions, locate_coordinator
from broker.coordinator.topic import InternalTopicCreator
from broker.coordinator.writer import OrderedWriter
from clients.clock import wall_clock_ms
from clients.protocol import ErrorCode
from clients.records.errors import RecordsError
from metadata.image import MetadataImage

logger = logging.getLogger(__name__)

W = TypeVar("W")


class CoordinatorRuntime(Generic[W]):
    """The partitions of `topic` that broker `broker_id` leads, loaded into `state`.

    `writer_for(partition)` makes the ordered writer of a loaded partition (None: the
    coordinator appends through `log` itself). `creator` creates the topic on first use
    (FindCoordinator). `caught_up()` is false until the broker has caught up with the
    metadata log: until then it leads nothing (`led_partitions`)."""

    def __init__(self, broker_id: int, topic: str, log: CoordinatorLog,
                 state: CoordinatorStateMachine, *,
                 creator: InternalTopicCreator | None = None,
                 writer_for: Callable[[int], OrderedWriter[W]] | None = None,
                 load_settings: LoadSettings = LoadSettings(),
                 caught_up: Callable[[], bool] = lambda: True,
                 clock: Callable[[], int] = wall_clock_ms) -> None:
        self.broker_id = broker_id
        self.topic = topic
        self.log = log
        self.load_settings = load_settings
        self._state = state
        self._creator = creator
        self._writer_for = writer_for
        self._caught_up = caught_up
        self._clock = clock
        # Partition -> the leader epoch it is (being) loaded at. A partition is in at most
        # one of these: loaded, loading, or waiting to start over after a failed load.
        self._loaded: dict[int, int] = {}
        self._loading: dict[int, int] = {}
        self._failed: dict[int, int] = {}
        self._writers: dict[int, OrderedWriter[W]] = {}
        self._nursery: trio.Nursery | None = None

    # -- ownership -----------------------------------------------------------------------

    def error(self, partition: int) -> int:
        """NONE when this broker serves `partition`, else why not."""
        if partition in self._loaded:
            return ErrorCode.NONE
        if partition in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if partition in self._failed:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE  # this broker leads it, but cannot load it
        return ErrorCode.NOT_COORDINATOR

    def epoch(self, partition: int) -> int | None:
        """The coordinator epoch of a loaded partition; None when it is not loaded."""
        return self._loaded.get(partition)

    def is_loading_partition(self, partition: int) -> bool:
        return partition in self._loading

    @property
    def is_loading(self) -> bool:
        return bool(self._loading)

    @property
    def loaded(self) -> dict[int, int]:
        """Each loaded partition's coordinator epoch (a copy)."""
        return dict(self._loaded)

    def writer(self, partition: int) -> OrderedWriter[W] | None:
        return self._writers.get(partition)

    def find_coordinator(self, image: MetadataImage, partition: int,
                         listener_name: str) -> CoordinatorLocation:
        """FindCoordinator's answer for a key of `partition` (`locate_coordinator`)."""
        return locate_coordinator(image, self.topic, partition, listener_name, self._creator,
                                  self._nursery)

    # -- leadership ----------------------------------------------------------------------

    async def run(self, image: MetadataImage, *,
                  task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Load what this broker leads in `image`, then loads and writers until cancelled;
        every partition is unloaded on the way out."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self.reconcile(image)
                task_status.started()
                await trio.sleep_forever()
        finally:
            self._nursery = None
            for partition in [*self._loaded, *self._loading, *self._failed]:
                self._unload(partition)

    def reconcile(self, image: MetadataImage) -> None:
        """Load the partitions this broker leads in `image`; unload the others, and those
        led at another epoch."""
        led = led_partitions(image, self.topic, self.broker_id, self._caught_up())
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
        name = f"{self.topic}-{partition}"
        while True:
            failure: Exception | None = None
            attempts = (itertools.count() if settings.attempts is None
                        else range(settings.attempts))
            for attempt in attempts:
                if self._loading.get(partition) != epoch:
                    return
                started = self._clock()
                try:
                    replay = await replay_partition(
                        self.log, self.topic, partition, self._state,
                        settings.records_per_yield,
                        lambda: self._loading.get(partition) == epoch)
                except (CoordinatorLogError, RecordsError) as exc:
                    failure = exc
                    # Expected while the replica manager catches up; damaged data is not.
                    level = (logging.DEBUG if isinstance(exc, CoordinatorLogError)
                             else logging.WARNING)
                    logger.log(level, "%s: load attempt %d failed: %s", name, attempt + 1, exc)
                    await trio.sleep(settings.retry_delay(attempt))
                    continue
                if replay is not None:
                    self._finish_load(partition, epoch, replay, started)
                return
            if self._loading.get(partition) != epoch:
                return
            # Not forever NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS: say why, and try
            # again later even if no metadata change comes to start a new load.
            logger.error("%s: gave up loading after %d attempts (%s); it serves nothing, "
                         "trying again in %g s", name, settings.attempts, failure,
                         settings.give_up_s)
            del self._loading[partition]
            self._failed[partition] = epoch
            await trio.sleep(settings.give_up_s)
            if self._failed.get(partition) != epoch:
                return
            del self._failed[partition]
            self._loading[partition] = epoch

    def _finish_load(self, partition: int, epoch: int, replay: Any, started: int) -> None:
        summary = self._state.install(partition, epoch, replay)
        del self._loading[partition]
        self._loaded[partition] = epoch
        if self._writer_for is not None:
            writer = self._writer_for(partition)
            self._writers[partition] = writer
            assert self._nursery is not None
            self._nursery.start_soon(writer.run)
        logger.info("%s-%d loaded at epoch %d: %s in %d ms", self.topic, partition, epoch,
                    summary, self._clock() - started)

    def _unload(self, partition: int) -> None:
        self._loading.pop(partition, None)
        self._failed.pop(partition, None)
        loaded = self._loaded.pop(partition, None) is not None
        writer = self._writers.pop(partition, None)
        if writer is not None:
            writer.close()
        self._state.unload(partition, loaded)
        if loaded:
            logger.info("%s-%d unloaded", self.topic, partition)
