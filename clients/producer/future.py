"""What ``send`` returns: a future of the record's ``RecordMetadata``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    """Where an acknowledged record landed. ``offset`` is -1 with acks=0 (no answer);
    ``timestamp`` is the broker's log-append time when the topic uses it."""

    topic: str
    partition: int
    offset: int
    timestamp: int


class DeliveryFuture:
    """The outcome of one ``send``: completed once by the producer, then immutable.

    Callbacks added with ``add_callback`` run in the producer's context as soon as the
    outcome is known (immediately if it already is).
    """

    # One is made per record: the state starts as these class defaults, so making a future
    # runs no __init__ (a slotted class would need one to set them).
    _result: RecordMetadata | None = None
    _error: BaseException | None = None
    _done = False
    # Most futures of a busy producer get no callback: the list is made on the first.
    _callbacks: list[Callable[[DeliveryFuture], None]] | None = None
    # (topic, partition, offset, timestamp) from ``succeed_batch``: the RecordMetadata is
    # made when someone asks for it, not for every acknowledged record.
    _landed: tuple[str, int, int, int] | None = None

    def done(self) -> bool:
        return self._done

    def succeeded(self) -> bool:
        return self._done and self._error is None

    def exception(self) -> BaseException | None:
        """The failure, or None (also while pending)."""
        return self._error

    def result(self) -> RecordMetadata:
        """The metadata; raises the failure, or RuntimeError while still pending."""
        if not self._done:
            raise RuntimeError("the record has not been acknowledged yet")
        if self._error is not None:
            raise self._error
        if self._result is None:
            assert self._landed is not None
            self._result = RecordMetadata(*self._landed)
        return self._result

    def add_callback(self, callback: Callable[[DeliveryFuture], None]) -> None:
        if self._done:
            callback(self)
        elif self._callbacks is None:
            self._callbacks = [callback]
        else:
            self._callbacks.append(callback)

    def set_result(self, metadata: RecordMetadata) -> None:
        self._complete(metadata, None)

    @staticmethod
    def succeed_batch(entries: Iterable[tuple[DeliveryFuture, int, int]], topic: str,
                      partition: int, base_offset: int, log_append_time_ms: int) -> None:
        """Complete each (future, offset delta, timestamp) of one batch written at
        ``base_offset`` (-1 when unknown: every offset is then -1), with the broker's
        ``log_append_time_ms`` when it is set (>= 0) instead of the record's timestamp. The
        RecordMetadata is made when someone asks for it; one loop, no call per record."""
        known = base_offset >= 0
        append_time = log_append_time_ms >= 0
        for future, delta, timestamp in entries:
            if future._done:
                continue
            future._landed = (topic, partition, base_offset + delta if known else -1,
                              log_append_time_ms if append_time else timestamp)
            future._done = True
            if future._callbacks is not None:
                future._run_callbacks()

    def set_exception(self, error: BaseException) -> None:
        self._complete(None, error)

    def _complete(self, result: RecordMetadata | None, error: BaseException | None) -> None:
        if self._done:
            return
        self._result, self._error, self._done = result, error, True
        if self._callbacks is not None:
            self._run_callbacks()

    def _run_callbacks(self) -> None:
        callbacks, self._callbacks = self._callbacks or [], None
        for callback in callbacks:
            callback(self)
