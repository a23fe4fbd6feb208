"""Kafka's consumer protocol: the bytes consumers put in JoinGroup and SyncGroup.

A member's subscription travels as JoinGroup protocol metadata, the leader's assignment as
SyncGroup assignment bytes; the coordinator never looks inside. Both start with an int16
version. The subscription gained owned partitions (v1), the generation (v2) and the rack
(v3); the assignment kept one layout through v0-v3. Fields are appended, never changed, so
a frame of a newer version decodes as the newest known one (trailing bytes ignored), as
Kafka's own consumers do.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterable

from clients.protocol import ProtocolError

TopicPartition = tuple[str, int]

PROTOCOL_TYPE = "consumer"
SUBSCRIPTION_MAX_VERSION = 3
ASSIGNMENT_MAX_VERSION = 3
# Version 2 carries the owned partitions and the generation (cooperative-sticky needs
# both); older decoders ignore the fields they do not know.
SUBSCRIPTION_VERSION = 2


@dataclass(frozen=True)
class Subscription:
    """A member's JoinGroup metadata: its topics and, from v1, what it owns now."""

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = -1
    rack_id: str | None = None
    version: int = SUBSCRIPTION_VERSION


@dataclass(frozen=True)
class Assignment:
    """The leader's SyncGroup answer for one member."""

    partitions: tuple[TopicPartition, ...] = ()
    user_data: bytes | None = None
    version: int = 0


def group_by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for topic, partition in partitions:
        grouped.setdefault(topic, []).append(partition)
    return grouped


class _Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def int16(self, value: int) -> None:
        self.parts.append(struct.pack(">h", value))

    def int32(self, value: int) -> None:
        self.parts.append(struct.pack(">i", value))

    def string(self, value: str | None) -> None:
        if value is None:
            self.int16(-1)
            return
        raw = value.encode()
        self.int16(len(raw))
        self.parts.append(raw)

    def bytes_(self, value: bytes | None) -> None:
        if value is None:
            self.int32(-1)
            return
        self.int32(len(value))
        self.parts.append(bytes(value))

    def topic_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        grouped = group_by_topic(partitions)
        self.int32(len(grouped))
        for topic, ids in grouped.items():
            self.string(topic)
            self.int32(len(ids))
            for p in ids:
                self.int32(p)

    def done(self) -> bytes:
        return b"".join(self.parts)


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data = memoryview(data)
        self.pos = 0
        self.what = what

    def _take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise ProtocolError(f"{self.what} is truncated at byte {self.pos}")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def at_end(self) -> bool:
        return self.pos >= len(self.data)

    def int16(self) -> int:
        return struct.unpack(">h", self._take(2))[0]

    def int32(self) -> int:
        return struct.unpack(">i", self._take(4))[0]

    def string(self, nullable: bool = False) -> str | None:
        size = self.int16()
        if size < 0:
            if nullable:
                return None
            raise ProtocolError(f"{self.what} has a null string where none is allowed")
        try:
            return bytes(self._take(size)).decode()
        except UnicodeDecodeError:
            raise ProtocolError(f"{self.what} has a string that is not UTF-8") from None

    def bytes_(self) -> bytes | None:
        size = self.int32()
        return None if size < 0 else bytes(self._take(size))

    def count(self) -> int:
        n = self.int32()
        # An array must fit in what is left (at least one byte per element).
        if n < -1 or n > len(self.data) - self.pos:
            raise ProtocolError(f"{self.what} has a bad array length {n}")
        return max(n, 0)

    def topic_partitions(self) -> tuple[TopicPartition, ...]:
        out: list[TopicPartition] = []
        for _ in range(self.count()):
            topic = self.string() or ""
            out.extend((topic, self.int32()) for _ in range(self.count()))
        return tuple(out)


def encode_subscription(subscription: Subscription) -> bytes:
    """JoinGroup metadata bytes for ``subscription`` at its ``version`` (0-3)."""
    version = subscription.version
    if not 0 <= version <= SUBSCRIPTION_MAX_VERSION:
        raise ValueError(f"subscription version {version} is not supported")
    w = _Writer()
    w.int16(version)
    w.int32(len(subscription.topics))
    for topic in subscription.topics:
        w.string(topic)
    w.bytes_(subscription.user_data)
    if version >= 1:
        w.topic_partitions(subscription.owned_partitions)
    if version >= 2:
        w.int32(subscription.generation_id)
    if version >= 3:
        w.string(subscription.rack_id)
    return w.done()


def decode_subscription(data: bytes) -> Subscription:
    """A member's subscription from JoinGroup metadata; ProtocolError if malformed."""
    r = _Reader(data, "consumer subscription")
    version = r.int16()
    if version < 0:
        raise ProtocolError(f"consumer subscription has a bad version {version}")
    topics = tuple(r.string() or "" for _ in range(r.count()))
    user_data = r.bytes_()
    owned: tuple[TopicPartition, ...] = ()
    generation_id, rack_id = -1, None
    # Older encoders (and kafka-python at v0) may stop early; absent fields keep defaults.
    if version >= 1 and not r.at_end():
        owned = r.topic_partitions()
    if version >= 2 and not r.at_end():
        generation_id = r.int32()
    if version >= 3 and not r.at_end():
        rack_id = r.string(nullable=True)
    return Subscription(topics, user_data, owned, generation_id, rack_id, version)


def encode_assignment(assignment: Assignment) -> bytes:
    """SyncGroup assignment bytes; every version 0-3 has the same layout."""
    if not 0 <= assignment.version <= ASSIGNMENT_MAX_VERSION:
        raise ValueError(f"assignment version {assignment.version} is not supported")
    w = _Writer()
    w.int16(assignment.version)
    w.topic_partitions(assignment.partitions)
    w.bytes_(assignment.user_data)
    return w.done()


def decode_assignment(data: bytes | None) -> Assignment:
    """A member's assignment; empty bytes (a member the leader left out) mean nothing."""
    if not data:
        return Assignment()
    r = _Reader(data, "consumer assignment")
    version = r.int16()
    if version < 0:
        raise ProtocolError(f"consumer assignment has a bad version {version}")
    partitions = r.topic_partitions()
    user_data = None if r.at_end() else r.bytes_()
    return Assignment(partitions, user_data, version)


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation_id: int) -> bytes:
    """The ``sticky`` assignor's subscription user data (StickyAssignorUserData v1): the
    member's previous assignment and its generation."""
    w = _Writer()
    w.topic_partitions(sorted(partitions))
    w.int32(generation_id)
    return w.done()


def decode_sticky_user_data(data: bytes) -> tuple[tuple[TopicPartition, ...], int]:
    """(previous assignment, generation) from sticky user data; v0 has no generation."""
    r = _Reader(data, "sticky assignor user data")
    partitions = r.topic_partitions()
    generation_id = -1 if r.at_end() else r.int32()
    return partitions, generation_id


def encode_generation_user_data(generation_id: int) -> bytes:
    """The ``cooperative-sticky`` assignor's user data: the generation alone (read by
    members whose subscription version predates the generation field)."""
    return struct.pack(">i", generation_id)


__all__ = [
    "ASSIGNMENT_MAX_VERSION", "Assignment", "PROTOCOL_TYPE", "SUBSCRIPTION_MAX_VERSION",
    "SUBSCRIPTION_VERSION", "Subscription", "decode_assignment", "decode_subscription",
    "TopicPartition", "decode_sticky_user_data", "encode_assignment",
    "encode_generation_user_data", "encode_sticky_user_data", "encode_subscription",
    "group_by_topic",
]
