"""The blocking consumer: a facade over the trio ``Consumer`` running on a helper thread.

Group membership needs heartbeats while the application is busy between polls, so the
trio consumer (with its heartbeat task) runs in a trio loop on one helper thread for the
consumer's lifetime, and every method hands its call to that loop and waits for the
result. Rebalance listeners run in a worker thread of that loop while ``poll`` (or
``unsubscribe``/``close``) waits, so they may call this consumer's methods (``commit``,
``position``, ``committed`` ...), except ``close``: that would wait for the very ``poll``
that waits for the listener, so it raises RuntimeError there. A consumer garbage-collected
without ``close`` asks its loop to close it and end (a listener that refers to the consumer
keeps it alive, though: close it).
"""

from __future__ import annotations

import functools
import re
import threading
import weakref
from typing import Any, Awaitable, Callable, Iterable, Mapping, TypeVar, cast

import trio

from clients.consumer.config import ConsumerConfig
from clients.consumer.core import TopicPartition
from clients.consumer.records import ConsumerRecord
from clients.consumer.group_metadata import ConsumerGroupMetadata
from clients.consumer.trio_consumer import Consumer

T = TypeVar("T")

# The consumers whose rebalance listener the current thread is running.
_listening = threading.local()


def _listening_to() -> set[int]:
    consumers: set[int] | None = getattr(_listening, "consumers", None)
    if consumers is None:
        consumers = _listening.consumers = set()
    return consumers


def _only_cancelled(exc: BaseException) -> bool:
    """Whether ``exc`` is trio's Cancelled, alone or in groups: how a call still waiting
    ends when the loop shuts down."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_only_cancelled(e) for e in exc.exceptions)
    return isinstance(exc, trio.Cancelled)

BlockingListener = Callable[[list[TopicPartition]], None]


class _LoopThread:
    """One trio loop on a helper thread, holding an open ``Consumer`` until stopped."""

    def __init__(self, config: ConsumerConfig) -> None:
        self.consumer: Consumer | None = None
        self.token: trio.lowlevel.TrioToken | None = None
        self.error: BaseException | None = None
        self._error_reported = False
        self._stop: trio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, args=(config,),
                                        name="raftka-consumer", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self.error is not None:
            raise self.error

    def _main(self, config: ConsumerConfig) -> None:
        async def serve() -> None:
            self._stop = trio.Event()
            self.token = trio.lowlevel.current_trio_token()
            async with Consumer(config) as consumer:
                self.consumer = consumer
                self._ready.set()
                await self._stop.wait()

        try:
            trio.run(serve)
        except BaseException as exc:  # handed to the caller of close (or __init__)
            self.error = exc
        finally:
            self._ready.set()

    def run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        return cast(T, self._call(trio.from_thread.run, fn, *args))

    def run_sync(self, fn: Callable[..., T], *args: Any) -> T:
        return cast(T, self._call(trio.from_thread.run_sync, fn, *args))

    def _call(self, via: Callable[..., Any], fn: Callable[..., Any], *args: Any) -> Any:
        if self.token is None or not self._thread.is_alive():
            raise self._closed_error() from self.error
        try:
            return via(fn, *args, trio_token=self.token)
        except trio.RunFinishedError:
            raise self._closed_error() from self.error
        except BaseException as exc:
            if not _only_cancelled(exc):
                raise
            # The loop is ending under this call: say why rather than trio's Cancelled.
            # (A listener's thread must not wait for the loop, which waits for it.)
            if id(self) not in _listening_to():
                self._thread.join(timeout=30)
            raise self._closed_error() from self.error

    def _closed_error(self) -> RuntimeError:
        if self.error is not None:
            self._error_reported = True    # raised here with its cause, not again by stop
            return RuntimeError(f"the consumer failed: {self.error!r}")
        return RuntimeError("the consumer is closed")

    def request_stop(self) -> None:
        """Ask the loop to close the consumer and end, from any thread (the loop's own
        included, where a garbage collection may run), without waiting for it."""
        if self.token is not None and self._stop is not None:
            try:
                self.token.run_sync_soon(self._stop.set)
            except trio.RunFinishedError:
                pass

    def stop(self) -> None:
        if self._thread.is_alive() and self._stop is not None and self.token is not None:
            try:
                trio.from_thread.run_sync(self._stop.set, trio_token=self.token)
            except trio.RunFinishedError:
                pass
        self._thread.join()
        if self.error is not None and not self._error_reported:
            error, self.error = self.error, None
            raise error


class BlockingConsumer:
    """A synchronous consumer with the trio ``Consumer``'s methods (see there)."""

    def __init__(self, config: ConsumerConfig | Mapping[str, Any] | None = None,
                 **overrides: Any) -> None:
        if not isinstance(config, ConsumerConfig):
            config = ConsumerConfig.from_mapping(config, **overrides)
        self.config = config
        self._loop = _LoopThread(config)
        self._closed = False
        # A consumer dropped without close() still ends its thread (and leaves its group).
        self._finalizer = weakref.finalize(self, self._loop.request_stop)

    @property
    def _consumer(self) -> Consumer:
        consumer = self._loop.consumer
        if consumer is None or self._closed:
            raise RuntimeError("the consumer is closed")
        return consumer

    def __enter__(self) -> BlockingConsumer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ---- assignment ----

    def subscribe(self, topics: Iterable[str] | re.Pattern[str],
                  on_assign: BlockingListener | None = None,
                  on_revoke: BlockingListener | None = None) -> None:
        """Join ``group.id`` for ``topics``; listeners run during ``poll`` (see module)."""
        self._loop.run_sync(self._consumer.subscribe, topics, self._wrap(on_assign),
                            self._wrap(on_revoke))

    def _wrap(self, listener: BlockingListener | None
              ) -> Callable[[list[TopicPartition]], Awaitable[None]] | None:
        if listener is None:
            return None
        key = id(self._loop)

        def call(partitions: list[TopicPartition]) -> None:
            listening = _listening_to()
            listening.add(key)
            try:
                listener(partitions)
            finally:
                listening.discard(key)

        async def in_worker(partitions: list[TopicPartition]) -> None:
            # Off the loop's thread, so the listener can call back into this consumer.
            await trio.to_thread.run_sync(functools.partial(call, partitions))
        return in_worker

    def unsubscribe(self) -> None:
        self._loop.run(self._consumer.unsubscribe)

    def subscription(self) -> list[str]:
        return self._loop.run_sync(self._consumer.subscription)

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        self._loop.run_sync(self._consumer.assign, list(partitions))

    def assignment(self) -> list[TopicPartition]:
        return self._loop.run_sync(self._consumer.assignment)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._loop.run_sync(self._consumer.seek, tp, offset)

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._loop.run_sync(self._consumer.seek_to_beginning, partitions)

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._loop.run_sync(self._consumer.seek_to_end, partitions)

    def group_metadata(self) -> ConsumerGroupMetadata:
        return self._loop.run_sync(self._consumer.group_metadata)

    def position(self, tp: TopicPartition) -> int:
        return self._loop.run(self._consumer.position, tp)

    def partitions_for(self, topic: str) -> list[int]:
        return self._loop.run(self._consumer.partitions_for, topic)

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        self._loop.run_sync(self._consumer.pause, list(partitions))

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        self._loop.run_sync(self._consumer.resume, list(partitions))

    def paused(self) -> list[TopicPartition]:
        return self._loop.run_sync(self._consumer.paused)

    def beginning_offsets(self, partitions: Iterable[TopicPartition]
                          ) -> dict[TopicPartition, int]:
        return self._loop.run(self._consumer.beginning_offsets, list(partitions))

    def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self._loop.run(self._consumer.end_offsets, list(partitions))

    def offsets_for_times(self, timestamps: Mapping[TopicPartition, int]
                          ) -> dict[TopicPartition, tuple[int, int] | None]:
        return self._loop.run(self._consumer.offsets_for_times, dict(timestamps))

    # ---- polling and offsets ----

    def poll(self, timeout_ms: float = 0, max_records: int | None = None
             ) -> list[ConsumerRecord]:
        return self._loop.run(self._consumer.poll, timeout_ms, max_records)

    def wakeup(self) -> None:
        """Make the ``poll`` in progress (or the next one) raise WakeupException; safe
        from any thread and from a signal handler (it only schedules the call)."""
        token = self._loop.token
        if token is None or self._closed:
            return
        try:
            token.run_sync_soon(self._consumer.wakeup)
        except trio.RunFinishedError:
            pass

    def commit(self, offsets: Mapping[TopicPartition, int] | None = None, *,
               asynchronous: bool = False,
               callback: Callable[[dict[TopicPartition, int], BaseException | None], None]
               | None = None) -> None:
        """As the trio ``commit``; an asynchronous commit's callback runs in a worker
        thread during a later ``poll``/``commit``/``close``, so it may use this consumer."""
        wrapped = None
        if callback is not None:
            def call(offsets: dict[TopicPartition, int], error: BaseException | None) -> None:
                callback(offsets, error)

            async def wrapped(offsets: dict[TopicPartition, int],
                              error: BaseException | None) -> None:
                await trio.to_thread.run_sync(functools.partial(call, offsets, error))
        self._loop.run(functools.partial(self._consumer.commit, offsets,
                                         asynchronous=asynchronous, callback=wrapped))

    def committed(self, partitions: Iterable[TopicPartition]
                  ) -> dict[TopicPartition, int | None]:
        return self._loop.run(self._consumer.committed, list(partitions))

    def close(self) -> None:
        """Commit and leave the group as the trio ``close`` does, then stop the thread.

        Not from a rebalance listener (RuntimeError): close once ``poll`` has returned."""
        if id(self._loop) in _listening_to():
            raise RuntimeError("close() cannot be called from a rebalance listener: the "
                               "listener runs inside poll, which close would wait for; "
                               "close after poll returns")
        if self._closed:
            return
        self._closed = True
        self._finalizer.detach()
        self._loop.stop()
