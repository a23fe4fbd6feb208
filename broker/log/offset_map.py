"""The cleaner's map from record key to latest offset, bounded like Kafka's.

Kafka sizes its map by ``log.cleaner.dedupe.buffer.size`` filled to
``log.cleaner.io.buffer.load.factor``, and keys it by 16-byte MD5 digests so that an entry's
size does not depend on the key's. This map does the same. A Python entry (digest, int offset,
dict slot) takes about 140 bytes, measured with tracemalloc, against Kafka's 24: the same
buffer holds fewer keys, and a pass whose dirty section has more cleans only up to where the
map filled (the next pass goes on from there).
"""

from __future__ import annotations

import hashlib

ENTRY_BYTES = 140
DEFAULT_BUFFER_BYTES = 128 * 1024 * 1024
DEFAULT_LOAD_FACTOR = 0.9


def capacity(buffer_bytes: int = DEFAULT_BUFFER_BYTES, load_factor: float = DEFAULT_LOAD_FACTOR) -> int:
    """Keys a map may hold within ``buffer_bytes`` filled to ``load_factor`` (at least 1)."""
    return max(1, int(buffer_bytes * load_factor) // ENTRY_BYTES)


def _digest(key: bytes) -> bytes:
    return hashlib.md5(key, usedforsecurity=False).digest()


class OffsetMap:
    """Latest offset of each key seen, for at most ``capacity`` keys."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._offsets: dict[bytes, int] = {}

    def __len__(self) -> int:
        return len(self._offsets)

    def has_room_for(self, keys: int) -> bool:
        """Whether ``keys`` more keys (all new, at worst) still fit."""
        return len(self._offsets) + keys <= self.capacity

    def put(self, key: bytes, offset: int) -> None:
        self._offsets[_digest(key)] = offset

    def latest(self, key: bytes) -> int:
        """The latest offset put for ``key``, or -1."""
        return self._offsets.get(_digest(key), -1)
