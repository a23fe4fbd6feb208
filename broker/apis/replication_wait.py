"""Kafka's DelayedProduce, shared by Produce (acks=all) and WriteTxnMarkers: wait until each
partition's high watermark passes what was appended, or the leadership moves, or time runs out."""

from __future__ import annotations

from typing import Any, Callable

import trio

from broker.replica.manager import ReplicaManager
from broker.replica.partition import Partition
from clients.protocol import ErrorCode

# Sets a partition's error in its response entry: (entry, code, message).
FailEntry = Callable[[dict[str, Any], int, str], None]


class PendingAppend:
    """One appended partition waiting for its HW to reach `required_offset`."""

    __slots__ = ("entry", "partition", "required_offset", "leader_epoch")

    def __init__(self, entry: dict[str, Any], partition: Partition, required_offset: int) -> None:
        self.entry = entry
        self.partition = partition
        self.required_offset = required_offset
        self.leader_epoch = partition.leader_epoch


def _settled(replicas: ReplicaManager, item: PendingAppend, fail: FailEntry) -> bool:
    partition = item.partition
    current = replicas.get_partition(*partition.key)
    if current is not partition or not partition.is_leader or partition.leader_epoch != item.leader_epoch:
        fail(item.entry, ErrorCode.NOT_LEADER_OR_FOLLOWER, "leadership moved while waiting for acks")
        return True
    if replicas.session_lost:
        fail(item.entry, ErrorCode.NOT_LEADER_OR_FOLLOWER,
             "this broker lost its session with the controller while waiting for acks")
        return True
    if partition.high_watermark < item.required_offset:
        return False
    if partition.is_under_min_isr:
        fail(item.entry, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
             "the ISR shrank below min.insync.replicas after the append")
    return True


async def await_replication(replicas: ReplicaManager, pending: list[PendingAppend],
                            timeout_ms: int, fail: FailEntry) -> None:
    """Wait until every pending append settled; the ones left at the deadline time out."""
    deadline = trio.current_time() + max(timeout_ms, 0) / 1000
    with replicas.purgatory.watch((p.partition.key for p in pending), "Produce") as waiter:
        while True:
            pending = [p for p in pending if not _settled(replicas, p, fail)]
            if not pending or not await waiter.wait(deadline):
                break
    for item in pending:
        fail(item.entry, ErrorCode.REQUEST_TIMED_OUT,
             f"the high watermark did not reach {item.required_offset} within {timeout_ms} ms")
