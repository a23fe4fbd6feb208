"""How a coordinator reads and writes its internal topic (`__consumer_offsets`,
`__transaction_state`): the `CoordinatorLog` interface, and its implementation over the
broker's ReplicaManager.
"""

from __future__ import annotations

import logging
from typing import Iterator, Protocol

from broker.log.errors import LogError
from broker.log.results import UpperBound
from broker.replica.append import AppendEntry, AppendOrigin, append_records
from broker.replica.errors import ReplicaError
from broker.replica.manager import ReplicaManager
from clients.protocol import ErrorCode

logger = logging.getLogger(__name__)

# Bytes per read while loading a partition.
LOAD_BUFFER_BYTES = 5 * 1024 * 1024


class CoordinatorLogError(Exception):
    """An append or read failed; `error_code` is Kafka's code for why."""

    def __init__(self, error_code: int, message: str = "") -> None:
        super().__init__(message or ErrorCode.from_code(error_code).name)
        self.error_code = int(error_code)


class CoordinatorLog(Protocol):
    """The partitions of a coordinator's internal topic that this broker leads."""

    async def append(self, partition: int, batch: bytes) -> int:
        """Append one record batch as leader and wait until it is committed (the high
        watermark passed it); the base offset, or CoordinatorLogError."""
        ...

    def read_from(self, partition: int, offset: int) -> Iterator[bytes]:
        """Whole record batches from `offset` to the log end, in chunks; CoordinatorLogError
        when the partition cannot be read (at the start or between chunks)."""
        ...

    def log_start_offset(self, partition: int) -> int:
        ...

    def next_sequence(self, partition: int, producer_id: int, producer_epoch: int) -> int:
        """The sequence number a transactional offset commit of this producer starts at."""
        ...


class ReplicaCoordinatorLog:
    """`CoordinatorLog` of `topic` over the local leader replicas: appends go through the
    replica manager's `append_records` with acks=all (Kafka's `offsets.commit.required.acks`
    = -1), waiting at most `commit_timeout_ms`."""

    def __init__(self, replicas: ReplicaManager, topic: str,
                 commit_timeout_ms: int = 5000) -> None:
        self._replicas = replicas
        self._topic = topic
        self._timeout_ms = commit_timeout_ms

    def _leader(self, partition: int):  # type: ignore[no-untyped-def]
        try:
            return self._replicas.leader_partition(self._topic, partition)
        except ReplicaError as exc:
            raise CoordinatorLogError(exc.error_code, str(exc)) from None

    async def append(self, partition: int, batch: bytes) -> int:
        """Append as leader (acks=all); the base offset once the high watermark passed it.
        Fails as a Produce would: the ISR below min.insync.replicas before the append
        (NOT_ENOUGH_REPLICAS) or after it (NOT_ENOUGH_REPLICAS_AFTER_APPEND), the leadership
        moved or this broker's controller session lost (NOT_LEADER_OR_FOLLOWER), or the
        timeout (REQUEST_TIMED_OUT)."""
        entry = AppendEntry(self._topic, partition, batch)
        await append_records(self._replicas, [entry], -1, self._timeout_ms,
                             AppendOrigin.COORDINATOR)
        if entry.error_code:
            raise CoordinatorLogError(entry.error_code, entry.error_message or "")
        return entry.base_offset

    def read_from(self, partition: int, offset: int) -> Iterator[bytes]:
        log = self._leader(partition).log
        position = max(offset, log.log_start_offset)
        while position < log.log_end_offset:
            try:
                chunk = log.read(position, LOAD_BUFFER_BYTES, UpperBound.LEO).read_bytes()
            except LogError as exc:
                # The caller yields between chunks, so the log may have moved meanwhile.
                raise CoordinatorLogError(exc.error_code, str(exc)) from None
            whole, next_offset = _whole_batches(chunk)
            if not whole:
                break
            yield whole
            position = next_offset

    def log_start_offset(self, partition: int) -> int:
        return self._leader(partition).log.log_start_offset

    def next_sequence(self, partition: int, producer_id: int, producer_epoch: int) -> int:
        """After the producer's last batch on the partition at this epoch (0 for a new
        producer or epoch): the leader's sequence check then holds for the coordinator's
        own transactional writes too."""
        entry = self._leader(partition).log.producer_state.producers.get(producer_id)
        if entry is None or entry.epoch != producer_epoch or entry.last_seq < 0:
            return 0
        return (entry.last_seq + 1) & 0x7FFFFFFF


def _whole_batches(chunk: bytes) -> tuple[bytes, int]:
    """The complete batches at the front of `chunk` and the offset after the last one."""
    from clients.records.header import LOG_OVERHEAD, parse_header, peek_batch_size

    pos, next_offset = 0, -1
    while pos + LOG_OVERHEAD <= len(chunk):
        size = peek_batch_size(chunk, pos)
        if size is None or pos + size > len(chunk):
            break
        next_offset = parse_header(chunk, pos).next_offset
        pos += size
    return chunk[:pos], next_offset
