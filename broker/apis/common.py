"""Small helpers the data-plane handlers share."""

from __future__ import annotations

import trio

from broker.log.errors import LogError
from broker.replica.errors import ReplicaError
from clients.protocol import ErrorCode


def error_code_of(exc: BaseException) -> int:
    """The Kafka error code for a log or replica error (UNKNOWN_SERVER_ERROR otherwise)."""
    if isinstance(exc, (LogError, ReplicaError)):
        return int(exc.error_code)
    return int(ErrorCode.UNKNOWN_SERVER_ERROR)


# Failures a handler answers per partition; anything else is a bug and propagates.
PARTITION_ERRORS = (LogError, ReplicaError)


# A handler working through a request's topics, partitions or resources lets the node's
# other connections run after about this many of them: a request naming 100,000 partitions
# then holds the event loop for milliseconds at a time, not for seconds.
ITEMS_PER_SLICE = 1000


class Slicer:
    """Counts the items a handler has answered and yields to trio after each slice."""

    __slots__ = ("_left", "_size")

    def __init__(self, size: int = ITEMS_PER_SLICE) -> None:
        self._size = size
        self._left = size

    async def tick(self, items: int = 1) -> None:
        """Count `items` more; at the end of a slice, let the other tasks run."""
        self._left -= items
        if self._left <= 0:
            self._left = self._size
            await trio.lowlevel.checkpoint()
