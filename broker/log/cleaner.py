"""Log compaction for ``cleanup.policy=compact``: keep the last record per key.

Kafka's design, one partition at a time: the dirty section (from the cleaner checkpoint to
the first uncleanable segment: the active one, one newer than min.compaction.lag.ms, or one
reaching above the high watermark) is scanned into a key -> latest-offset map (of bounded
size: a dirty section with more keys is cleaned up to where the map filled); then every
segment from the log start to the end of the dirty section is rewritten without superseded
records. Offsets are preserved (readers see gaps), and each batch keeps its last offset so
producer sequences stay valid. Tombstones get a delete horizon (now + delete.retention.ms,
stored in the batch as KIP-534 does) the first time they are cleaned and are dropped by a
later clean once it has passed.

Each rewritten segment is swapped in atomically: ``.cleaned`` files, renamed to ``.swap``,
the old segment renamed to ``.deleted``, then the ``.swap`` renamed into place. The loader
completes or discards an interrupted swap. This is not a hot path: records are parsed.

Transactions (see cleaner_txn): nothing at or past the last stable offset is cleaned; data of
aborted transactions is removed, and markers once their transactions' data is gone and their
delete horizon passed. Each cleaned segment gets the aborted-transaction index entries of
the ABORT markers it keeps.

A pass can also run in steps (`clean_log_steps`), so that the broker's event loop serves
produce and fetch between them instead of stalling for a whole pass.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generator, Iterator

from broker.log.cleaner_txn import CleanedTransactions, rewrite_marker
from broker.log.markers import marker_at
from broker.log.offset_map import OffsetMap, capacity
from broker.log.segment import CLEANED_SUFFIX, LogSegment
from clients.records.batch import RecordBatch, decode_batch, encode_batch
from clients.records.errors import RecordsError
from clients.records.header import DELETE_HORIZON_MASK, BatchHeader, parse_header

if TYPE_CHECKING:
    from broker.log.partition_log import PartitionLog

logger = logging.getLogger(__name__)

# Batch bytes a stepped pass reads between two steps: about 10 ms of decoding and encoding.
STEP_BYTES = 256 * 1024
DEFAULT_MAP_CAPACITY = capacity()


@dataclass(frozen=True, slots=True)
class CleanerStats:
    """What one cleaning pass did, for its log line and the tests."""

    segments: int
    bytes_before: int
    bytes_after: int
    records_removed: int
    first_dirty_offset: int
    end_offset: int


def _cleanable_end(log: PartitionLog, now_ms: int) -> int:
    """First offset the cleaner must not touch (a segment boundary): never past the LSO, so
    no open transaction is cleaned."""
    config = log.config
    stable = log.last_stable_offset
    for segment in log.inactive_segments:
        too_young = config.min_compaction_lag_ms > 0 and now_ms - segment.largest_timestamp() < config.min_compaction_lag_ms
        if too_young or segment.next_offset > stable:
            return segment.base_offset
    return log.active_segment.base_offset


class _PassAbandoned(Exception):
    """The log changed under a stepped pass in a way that makes its work invalid."""


class _Pacer:
    """Counts the bytes a pass reads and ends a step every STEP_BYTES.

    On resuming it checks that the log still holds every segment the pass has yet to read or
    replace, unchanged: between steps, retention may have deleted one (and, once the delete
    delay passed, closed its fd, whose number may since name another file), a truncation
    may have cut one, or the log may have been closed. A topic no longer compacted stops
    the pass too.
    """

    def __init__(self, log: PartitionLog, segments: list[LogSegment]) -> None:
        self.log = log
        self.pending = list(segments)  # not yet swapped out
        self._truncations = log.truncations
        self._compact = log.config.compact
        self._bytes = 0

    def step(self, size: int) -> Iterator[None]:
        self._bytes += size
        if self._bytes >= STEP_BYTES:
            self._bytes = 0
            yield
            self.check()

    def check(self) -> None:
        log = self.log
        if (log.closed or log.truncations != self._truncations or (self._compact and not log.config.compact)
                or not log.holds(self.pending)):
            raise _PassAbandoned


def _decode(segment: LogSegment, position: int, header: BatchHeader) -> RecordBatch | None:
    data = os.pread(segment.fd, header.size, position)
    try:
        return decode_batch(data)
    except RecordsError as exc:
        logger.warning("%s: cannot decode batch at %d, kept as is: %s", segment.log_path, position, exc)
        return None


def _build_offset_map(dirty: list[LogSegment], offsets: OffsetMap, first_dirty: int,
                      txns: CleanedTransactions, pacer: _Pacer) -> Generator[None, None, int | None]:
    """Map the keys of the dirty batches (from ``first_dirty`` on), aborted ones left out;
    returns the base offset of the first batch that no longer fit, or None when all did. The
    first batch always goes in, so that every pass makes progress."""
    for segment in dirty:
        for position, header in segment.iter_headers(0):
            if header.last_offset < first_dirty:
                continue  # cleaned by an earlier pass, and mapped by it
            if header.is_control:
                # Markers end transactions: a later one of the same producer is not aborted.
                txns.on_marker(header, marker_at(segment.fd, position, header))
            elif not txns.on_data_batch(header):
                if len(offsets) and not offsets.has_room_for(header.records_count):
                    return header.base_offset
                batch = _decode(segment, position, header)
                if batch is not None:
                    for record in batch.records:
                        if record.key is not None and record.offset is not None:
                            offsets.put(record.key, record.offset)
            yield from pacer.step(header.size)
    return None


def _run(steps: Generator[None, None, CleanerStats | None]) -> CleanerStats | None:
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]


def clean_log(log: PartitionLog, now_ms: int, *, force: bool = False,
              map_capacity: int = DEFAULT_MAP_CAPACITY) -> CleanerStats | None:
    """Compact ``log`` if it is due (dirty ratio or max.compaction.lag.ms); None if not.

    One pass maps at most ``map_capacity`` keys (see offset_map); a larger dirty section is
    cleaned up to where the map filled."""
    return _run(clean_log_steps(log, now_ms, force=force, map_capacity=map_capacity))


def clean_log_steps(log: PartitionLog, now_ms: int, *, force: bool = False,
                    map_capacity: int = DEFAULT_MAP_CAPACITY) -> Generator[None, None, CleanerStats | None]:
    """:func:`clean_log` as a generator that yields every STEP_BYTES of batches read; its
    return value is clean_log's.

    The caller may let other tasks use the log between steps: appends only touch the active
    segment, which a pass never reads. If retention, a truncation or closing the log took a
    segment of the pass away meanwhile, the pass stops and returns None. Segments swapped in
    by then stay (each swap is complete); the dirty section stays dirty, for the next pass.
    A pass closed early (``steps.close()``, e.g. on cancellation) removes its unfinished
    ``.cleaned`` segment.
    """
    config = log.config
    first_dirty = max(log.first_dirty_offset, log.log_start_offset)
    end = _cleanable_end(log, now_ms)
    # Tombstones whose delete horizon passed make a log worth cleaning even with no new data.
    horizon_due = log.next_delete_horizon_ms is not None and log.next_delete_horizon_ms <= now_ms
    in_range = [s for s in log.inactive_segments if s.base_offset < end]
    dirty = [s for s in in_range if s.next_offset > first_dirty and s.base_offset < end]
    if not in_range or (not dirty and not horizon_due):
        return None
    dirty_bytes = sum(s.size for s in dirty)
    total_bytes = sum(s.size for s in in_range)
    ratio = dirty_bytes / total_bytes if total_bytes else 0.0
    overdue = any(now_ms - s.rolling_base_ms() > config.max_compaction_lag_ms for s in dirty)
    if not force and ratio < config.min_cleanable_dirty_ratio and not overdue and not horizon_due:
        return None
    pacer = _Pacer(log, in_range)
    offset_map = OffsetMap(map_capacity)
    before, after, removed = 0, 0, 0
    horizons: list[int] = []
    cleaned: LogSegment | None = None
    try:
        aborted = log.aborted_transactions(in_range[0].base_offset, end)
        map_full_at = yield from _build_offset_map(dirty, offset_map, first_dirty,
                                                   CleanedTransactions(aborted), pacer)
        if map_full_at is not None:
            end = map_full_at
            in_range = [s for s in in_range if s.base_offset < end]
            pacer.pending = list(in_range)
        txns = CleanedTransactions(aborted)
        for segment in in_range:
            before += segment.size
            cleaned = _open_cleaned(log, segment, now_ms)
            removed += yield from _clean_segment(log, segment, cleaned, offset_map, end, now_ms, horizons,
                                                 txns, pacer)
            after += cleaned.size
            # From here on the files belong to the log, whatever happens.
            finished, cleaned = cleaned, None
            log.replace_segment(segment, finished, now_ms)
            pacer.pending.remove(segment)
    except _PassAbandoned:
        logger.info("%s: cleaning pass abandoned: the log changed under it", log.name)
        return None
    finally:
        if cleaned is not None:
            cleaned.close_and_delete()
    log.mark_cleaned(max(end, first_dirty), min(horizons) if horizons else None)
    stats = CleanerStats(len(in_range), before, after, removed, first_dirty, end)
    logger.info("%s: cleaned %s", log.name, stats)
    return stats


def _retained(batch: RecordBatch, offset_map: OffsetMap, now_ms: int) -> list:  # type: ignore[type-arg]
    horizon = batch.delete_horizon_ms
    kept = []
    for record in batch.records:
        if record.key is not None and offset_map.latest(record.key) > (record.offset or 0):
            continue  # superseded by a later record with the same key
        if record.value is None and horizon is not None and horizon <= now_ms:
            continue  # tombstone past its delete horizon
        kept.append(record)
    return kept


def _open_cleaned(log: PartitionLog, segment: LogSegment, now_ms: int) -> LogSegment:
    """An empty ``.cleaned`` segment to rewrite ``segment`` into."""
    for stale in segment.directory.glob(f"{segment.base_offset:020d}.*{CLEANED_SUFFIX}"):
        stale.unlink()
    return LogSegment(segment.directory, segment.base_offset, log.config.segment_settings(),
                      suffix=CLEANED_SUFFIX, active=True, created_ms=now_ms)


def _clean_segment(log: PartitionLog, segment: LogSegment, target: LogSegment, offset_map: OffsetMap,
                   end: int, now_ms: int, horizons: list[int], txns: CleanedTransactions,
                   pacer: _Pacer) -> Generator[None, None, int]:
    """Write the retained batches of ``segment`` to ``target``; returns records dropped.

    Batches from ``end`` on (past where the key map filled) are copied as they are: their
    keys were not mapped, so their tombstones must not yet get, or pass, a delete horizon."""
    dropped = 0
    for position, header in segment.iter_headers(0):
        if header.base_offset >= end:
            data: bytes | None = os.pread(segment.fd, header.size, position)
        else:
            data = _rewrite_batch(log, segment, position, header, offset_map, now_ms, txns)
        if data is None:
            dropped += header.records_count
        else:
            new_header = parse_header(data)
            if new_header.attributes & DELETE_HORIZON_MASK:
                horizons.append(new_header.base_timestamp)
            dropped += header.records_count - new_header.records_count
            target.append(data, [(0, new_header)])
        yield from pacer.step(header.size)
    # The pass may have yielded since the last check: the segment must still be the one read.
    pacer.check()
    # Aborts kept by this pass, then those of markers copied as they are (from `end` on).
    for txn in txns.take_index_entries() + [t for t in segment.txn_index.entries if t.last_offset >= end]:
        target.txn_index.append(txn)
    target.become_inactive()
    target.flush()
    return dropped


def _rewrite_batch(log: PartitionLog, segment: LogSegment, position: int, header: BatchHeader,
                   offset_map: OffsetMap, now_ms: int, txns: CleanedTransactions) -> bytes | None:
    original = os.pread(segment.fd, header.size, position)
    if header.is_control:
        return rewrite_marker(original, header, now_ms, log.config.delete_retention_ms, txns,
                              _is_last_batch_of_producer(log, header))
    aborted = txns.on_data_batch(header)
    batch = _decode(segment, position, header)
    if batch is None:
        return original
    kept = [] if aborted else _retained(batch, offset_map, now_ms)
    has_tombstone = any(r.value is None for r in kept)
    needs_horizon = has_tombstone and not header.attributes & DELETE_HORIZON_MASK
    if len(kept) == len(batch.records) and not needs_horizon:
        return original
    if not kept and not _is_last_batch_of_producer(log, header):
        return None
    horizon = now_ms + log.config.delete_retention_ms if needs_horizon else batch.delete_horizon_ms
    try:
        return encode_batch(
            kept, base_offset=header.base_offset, compression=header.compression,
            timestamp_type=1 if header.is_log_append_time else 0,
            producer_id=header.producer_id, producer_epoch=header.producer_epoch,
            base_sequence=header.base_sequence, partition_leader_epoch=header.partition_leader_epoch,
            is_transactional=header.is_transactional, last_offset_delta=header.last_offset_delta,
            delete_horizon_ms=horizon if has_tombstone else None,
            base_timestamp=None if kept or has_tombstone else header.base_timestamp,
        )
    except RecordsError as exc:
        logger.warning("%s: cannot re-encode batch at %d, kept as is: %s", segment.log_path, position, exc)
        return original


def _is_last_batch_of_producer(log: PartitionLog, header: BatchHeader) -> bool:
    """An idempotent producer's last batch stays (maybe empty) so its sequence survives; so
    does a marker after its last data batch (it holds the producer's current epoch)."""
    if header.producer_id < 0:
        return False
    entry = log.producer_state.producers.get(header.producer_id)
    if entry is None:
        return False
    last_data = entry.batches[-1].last_offset if entry.batches else -1
    if header.is_control:
        return last_data < header.base_offset
    return last_data == header.last_offset

