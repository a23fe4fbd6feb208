"""Carries metadata updates from the Raft thread into trio, in log order.

The state machine calls `on_metadata_update` on pysyncobj's thread for every applied batch.
That call only appends to a queue and, at most once per burst, schedules a wake-up on the
trio loop with `TrioToken.run_sync_soon`; it never blocks and never waits for trio. The trio
task in `run` drains the queue and hands each (delta, image) to the broker's publishers one
after another, so every publisher sees every delta exactly once and in offset order.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from typing import Callable, Protocol, runtime_checkable

import trio

from metadata.delta import MetadataDelta
from metadata.image import MetadataImage

logger = logging.getLogger(__name__)


@runtime_checkable
class TrioMetadataPublisher(Protocol):
    """A trio-side consumer of metadata updates (metadata cache, replica manager, ...)."""

    async def on_metadata(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """Act on `image`; `delta` says what changed since the previous image."""
        ...


class MetadataBridge:
    """A `metadata.publisher.MetadataPublisher` that re-publishes into trio.

    `image` is the last image delivered on the trio side: what the broker serves from, and
    never ahead of what its publishers have been told.
    """

    def __init__(self, initial_image: MetadataImage | None = None) -> None:
        self._lock = threading.Lock()
        self._queue: deque[tuple[MetadataDelta, MetadataImage]] = deque()
        self._token: trio.lowlevel.TrioToken | None = None
        self._wake_scheduled = False
        self._pending = trio.Event()
        self._publishers: list[TrioMetadataPublisher] = []
        self._image = initial_image if initial_image is not None else MetadataImage.empty()
        # The newest image every publisher has finished with (`image` moves before them).
        self._published = self._image
        self._delivered = trio.Event()

    @property
    def image(self) -> MetadataImage:
        """The newest image delivered to the trio side."""
        return self._image

    def add_publisher(self, publisher: TrioMetadataPublisher) -> None:
        """Deliver every later update to `publisher` (after those added before it)."""
        self._publishers.append(publisher)

    # -- Raft thread -----------------------------------------------------------------------

    def on_metadata_update(self, delta: MetadataDelta, new_image: MetadataImage) -> None:
        """Queue one applied batch; called on the thread that applies metadata."""
        with self._lock:
            self._queue.append((delta, new_image))
            token = self._token
            if token is None or self._wake_scheduled:
                return
            self._wake_scheduled = True
        self._schedule_wake(token)

    def _schedule_wake(self, token: trio.lowlevel.TrioToken) -> None:
        try:
            token.run_sync_soon(self._wake)
        except trio.RunFinishedError:
            pass  # the node is gone; nobody is left to deliver to

    # -- trio side -------------------------------------------------------------------------

    def _wake(self) -> None:
        self._pending.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
                  ) -> None:
        """Deliver queued and future updates until cancelled. Updates queued before `run`
        started (the journal replayed at start-up) are delivered first."""
        with self._lock:
            self._token = trio.lowlevel.current_trio_token()
            self._wake_scheduled = bool(self._queue)
        if self._wake_scheduled:
            self._pending.set()
        task_status.started()
        while True:
            await self._pending.wait()
            self._pending = trio.Event()
            with self._lock:
                batch = list(self._queue)
                self._queue.clear()
                self._wake_scheduled = False
            for delta, image in batch:
                await self._deliver(delta, image)

    async def _deliver(self, delta: MetadataDelta, image: MetadataImage) -> None:
        # The served image moves first, as Kafka updates its metadata cache before the
        # replica manager acts on the same delta.
        self._image = image
        for publisher in self._publishers:
            try:
                await publisher.on_metadata(delta, image)
            except Exception:
                logger.exception("metadata publisher %r failed at offset %d", publisher,
                                 image.offset)
        self._published = image
        delivered, self._delivered = self._delivered, trio.Event()
        delivered.set()

    async def wait_for(self, predicate: Callable[[MetadataImage], bool]) -> MetadataImage:
        """Wait until an image every publisher has handled satisfies `predicate`; return it.
        Use under a cancel scope for a deadline."""
        while not predicate(self._published):
            await self._delivered.wait()
        return self._published
