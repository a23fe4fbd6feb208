"""Small helpers the data-plane handlers share: the per-partition errors they answer, with
their Kafka codes (the replica manager's, which lets them through), and the slicing that
lets a large request give way to the other connections."""

from __future__ import annotations

import trio

from broker.replica.errors import PARTITION_ERRORS, error_code_of

__all__ = ["ITEMS_PER_SLICE", "PARTITION_ERRORS", "Slicer", "error_code_of"]


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
