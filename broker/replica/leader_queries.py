"""What the admin and offset APIs ask of a leader replica, answered from its log (Kafka's
`Partition.fetchOffsetForTimestamp`, `lastOffsetForLeaderEpoch`, `deleteRecordsOnLeader`,
`ReplicaManager.activeProducerState` and `describeLogDirs`), so that the request handlers
never reach into a log themselves."""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from broker.replica.errors import OffsetNotAvailable, OffsetOutOfRange, ReplicaError
from broker.replica.manager import ReplicaManager
from broker.replica.partition import Partition
from clients.protocol import ErrorCode

logger = logging.getLogger(__name__)

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
CONSUMER_REPLICA_ID = -1
READ_COMMITTED = 1
# DescribeLogDirs' offset lag of a log this broker holds without a partition.
INVALID_OFFSET_LAG = -1


def offset_for_timestamp(partition: Partition, timestamp: int, replica_id: int,
                         isolation_level: int) -> tuple[int, int, int] | None:
    """(timestamp, offset, leader epoch) that ListOffsets answers for `timestamp` (or one of
    the special timestamps), None when no record qualifies. Raises OffsetNotAvailable while a
    new leader's high watermark has not reached its epoch's start."""
    log = partition.log
    consumer = replica_id == CONSUMER_REPLICA_ID
    if not consumer:
        last_fetchable = log.log_end_offset
    elif isolation_level == READ_COMMITTED:
        last_fetchable = log.last_stable_offset
    else:
        last_fetchable = log.high_watermark
    not_available = consumer and partition.leader_epoch_start_offset > log.high_watermark
    if timestamp == LATEST_TIMESTAMP:
        if not_available:
            raise OffsetNotAvailable(f"{partition.topic}-{partition.partition_id}: the high "
                                     "watermark is behind the leader epoch start offset")
        return -1, last_fetchable, partition.leader_epoch
    found = log.offset_for_timestamp(timestamp)
    if found is None or found[1] < 0:
        if not_available:
            raise OffsetNotAvailable(f"{partition.topic}-{partition.partition_id}: offsets "
                                     "are not available yet")
        return None
    ts, offset = found
    # As Kafka: only the earliest offset may lie at or past what a client may fetch; an
    # answer by time (max timestamp too) names a fetchable record or none.
    if timestamp != EARLIEST_TIMESTAMP and offset >= last_fetchable:
        return None
    return ts, offset, log.epoch_cache.epoch_for_offset(offset)


def end_offset_for_epoch(partition: Partition, leader_epoch: int) -> tuple[int, int]:
    """(epoch, end offset) that OffsetForLeaderEpoch answers: the largest epoch at most
    `leader_epoch` and where it ended, from the leader's epoch cache."""
    log = partition.log
    return log.epoch_cache.end_offset_for(leader_epoch, log.log_end_offset)


def delete_records_before(partition: Partition, offset: int) -> int:
    """Move the log start offset up to `offset` (-1: the high watermark); the new low
    watermark. A compacted-only topic refuses (POLICY_VIOLATION), an offset past the high
    watermark is out of range."""
    log = partition.log
    name = f"{partition.topic}-{partition.partition_id}"
    if log.config.compact and not log.config.delete:
        raise ReplicaError(f"records of {name} cannot be deleted: the topic is compacted",
                           ErrorCode.POLICY_VIOLATION)
    if offset != -1 and (offset < 0 or offset > log.high_watermark):
        raise OffsetOutOfRange(f"cannot delete records of {name} before {offset}: "
                               f"the high watermark is {log.high_watermark}")
    low_watermark = log.delete_records_before(offset)
    logger.info("%s: log start offset now %d", name, low_watermark)
    return low_watermark


@dataclass(frozen=True, slots=True)
class ActiveProducer:
    """One producer a partition's log holds state for (DescribeProducers)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


def active_producers(partition: Partition) -> list[ActiveProducer]:
    """The producers the leader's log tracks, as DescribeProducers reports them."""
    return [ActiveProducer(e.producer_id, e.epoch, e.last_seq, e.last_timestamp,
                           e.coordinator_epoch, e.current_txn_first_offset)
            for e in partition.log.producer_state.producers.values()]


@dataclass(frozen=True, slots=True)
class ReplicaInDir:
    """A log in a directory: its size and how far it is behind the high watermark."""

    topic: str
    partition: int
    size_bytes: int
    offset_lag: int


@dataclass(frozen=True, slots=True)
class LogDirInfo:
    """One log directory (DescribeLogDirs): its resolved path, logs and disk space (-1 when
    the disk cannot be asked)."""

    path: str
    replicas: tuple[ReplicaInDir, ...]
    total_bytes: int
    usable_bytes: int


def describe_log_dirs(replicas: ReplicaManager,
                      wanted: set[tuple[str, int]] | None) -> list[LogDirInfo]:
    """Every log directory with its logs (only those in `wanted` unless it is None), in
    topic and partition order."""
    return [_describe(replicas, path, wanted) for path in replicas.log_manager.log_dirs]


def _describe(replicas: ReplicaManager, path: Path,
              wanted: set[tuple[str, int]] | None) -> LogDirInfo:
    try:
        usage = shutil.disk_usage(path)
        total, usable = usage.total, usage.free
    except OSError:
        total = usable = -1
    return LogDirInfo(str(path.resolve()), tuple(_replicas_in(replicas, path, wanted)),
                      total, usable)


def _replicas_in(replicas: ReplicaManager, path: Path,
                 wanted: set[tuple[str, int]] | None) -> Iterator[ReplicaInDir]:
    logs = replicas.log_manager
    for log in sorted(logs.logs(), key=lambda l: (l.topic, l.partition)):
        key = (log.topic, log.partition)
        if logs.log_dir_of(*key) != path or (wanted is not None and key not in wanted):
            continue
        partition = replicas.get_partition(*key)
        lag = (INVALID_OFFSET_LAG if partition is None
               else max(partition.high_watermark - log.log_end_offset, 0))
        yield ReplicaInDir(log.topic, log.partition, log.size_in_bytes, lag)
