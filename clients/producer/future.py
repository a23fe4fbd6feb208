"""What ``send`` returns: a future of the record's ``RecordMetadata``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


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

    __slots__ = ("_result", "_error", "_done", "_callbacks")

    def __init__(self) -> None:
        self._result: RecordMetadata | None = None
        self._error: BaseException | None = None
        self._done = False
        self._callbacks: list[Callable[[DeliveryFuture], None]] = []

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
        assert self._result is not None
        return self._result

    def add_callback(self, callback: Callable[[DeliveryFuture], None]) -> None:
        if self._done:
            callback(self)
        else:
            self._callbacks.append(callback)

    def set_result(self, metadata: RecordMetadata) -> None:
        self._complete(metadata, None)

    def set_exception(self, error: BaseException) -> None:
        self._complete(None, error)

    def _complete(self, result: RecordMetadata | None, error: BaseException | None) -> None:
        if self._done:
            return
        self._result, self._error, self._done = result, error, True
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)
