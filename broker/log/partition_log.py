"""One partition's log: segments, offsets, producer state and the leader epoch cache.

Produce, fetch and replication stay header-only: batches are validated from their 61-byte
headers and CRC, stamped in place and written with one os.write; reads hand back file ranges.
"""

from __future__ import annotations

import bisect
import dataclasses
import logging
import os
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from broker.log import errors
from broker.log.checkpoints import fsync_dir, read_partition_metadata, write_partition_metadata
from broker.log.config import PRODUCER_ID_EXPIRATION_MS, LogConfig
from broker.log.epoch_cache import LeaderEpochCache
from broker.log.flush_plan import FlushPlan
from broker.log.loader import load_segments
from broker.log.markers import marker_at, marker_batch, marker_in
from broker.log.producer_state import CompletedTxn, ProducerStateManager
from broker.log.results import AppendResult, ReadResult, UpperBound
from broker.log.segment import CLEANED_SUFFIX, DELETED_SUFFIX, SWAP_SUFFIX, LogSegment
from broker.log.timestamps import offset_for_timestamp
from broker.log.txn_index import AbortedTxn, collect_aborted
from broker.log.validation import validate_leader_batch
from broker.log.validator import RecordPolicy, validate_records
from broker.stats.histogram import Histogram
from clients.clock import wall_clock_ms
from clients.records.errors import CorruptRecordError
from clients.records.header import (
    BatchHeader,
    crc_is_valid,
    iter_batches,
    parse_header,
    peek_batch_size,
    stamp_log_append_time,
    stamp_offsets,
)

logger = logging.getLogger(__name__)

_Method = TypeVar("_Method", bound=Callable[..., Any])


def _storage_guarded(method: _Method) -> _Method:
    """Kafka's log-dir failure handling for one I/O method: refused with
    KAFKA_STORAGE_ERROR once the log is offline; an I/O error (a full disk, a failed device)
    takes the log offline and is reported through ``on_storage_error``."""
    def guarded(self: "PartitionLog", *args: Any, **kwargs: Any) -> Any:
        if self.offline:
            raise errors.KafkaStorageError(f"{self.name}: its log directory is offline")
        try:
            return method(self, *args, **kwargs)
        except errors.KafkaStorageError as exc:
            self._storage_failed(exc)
            raise
        except OSError as exc:
            failure = errors.KafkaStorageError(f"{self.name}: {exc}")
            self._storage_failed(failure)
            raise failure from exc
    guarded.__name__, guarded.__doc__ = method.__name__, method.__doc__
    return guarded  # type: ignore[return-value]

_INT32_MAX = 2**31 - 1


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


class PartitionLog:
    """The log of one partition replica, in ``<log.dir>/<topic>-<partition>/``."""

    def __init__(
        self,
        directory: Path,
        topic: str,
        partition: int,
        config: LogConfig,
        *,
        topic_id: uuid.UUID | None = None,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        high_watermark: int = 0,
        clean_shutdown: bool = True,
        now_ms: int | None = None,
    ) -> None:
        now_ms = wall_clock_ms() if now_ms is None else now_ms
        # Set once an I/O error took this log's directory offline; every read and write is
        # then refused. ``on_storage_error`` (the log manager's) hears of the first failure.
        self.offline = False
        self.on_storage_error: Callable[[errors.KafkaStorageError], None] | None = None
        self.directory = directory
        self.topic = topic
        self.partition = partition
        self.config = config
        # Where flush durations go (Kafka's LogFlushRateAndTimeMs); set by the LogManager.
        self.flush_time_ms: Histogram | None = None
        # A new partition directory, and every segment file created later, is durable only
        # once the directory holding it is fsynced too: the next flush does that.
        self._parent_unsynced = not directory.exists()
        self._directory_unsynced = self._parent_unsynced
        directory.mkdir(parents=True, exist_ok=True)
        self.topic_id = self._check_topic_id(topic_id)
        self._segments: list[LogSegment] = load_segments(
            directory, config.segment_settings(), recovery_point=recovery_point,
            clean_shutdown=clean_shutdown, now_ms=now_ms,
        )
        if not self._segments:
            self._segments.append(self._new_segment(max(log_start_offset, 0), now_ms))
        self._jitter_ms = config.random_jitter_ms()
        self._record_policy = RecordPolicy.from_config(config)
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        self._unflushed_messages = 0
        self._defer_flush = False
        # A flush.messages flush is due but was deferred (see flush_deferred).
        self.flush_pending = False
        self._last_flush_ms = now_ms
        self.log_start_offset = max(log_start_offset, self._segments[0].base_offset)
        self.first_dirty_offset = self.log_start_offset  # compaction progress (cleaner checkpoint)
        self.next_delete_horizon_ms: int | None = None  # earliest tombstone horizon the cleaner set
        self.truncations = 0  # bumped by every truncation, so a stepped cleaning pass notices one
        self.recovery_point = min(recovery_point, self.log_end_offset) if clean_shutdown else self.log_end_offset
        self.high_watermark = min(max(high_watermark, self.log_start_offset), self.log_end_offset)
        self.epoch_cache = LeaderEpochCache(directory)
        self.producer_state = ProducerStateManager(directory)
        if self.log_start_offset > self.log_end_offset:
            # The checkpoint is ahead of what survived; start over at the checkpointed offset.
            self.truncate_fully_and_start_at(self.log_start_offset, now_ms)
        if not clean_shutdown:
            for segment in self._segments:
                segment.flush()
            # Files created before the crash may not have had their directory entries synced.
            self._directory_unsynced = self._parent_unsynced = True
        self.epoch_cache.truncate_from_end(self.log_end_offset)
        self.epoch_cache.truncate_from_start(self.log_start_offset)
        self._rebuild_producer_state()
        self.closed = False

    def _storage_failed(self, exc: errors.KafkaStorageError) -> None:
        if self.offline:
            return
        self.offline = True
        logger.error("%s: storage failure, taking the log offline: %s", self.name, exc)
        if self.on_storage_error is not None:
            self.on_storage_error(exc)

    def _check_topic_id(self, topic_id: uuid.UUID | None) -> uuid.UUID | None:
        stored = read_partition_metadata(self.directory)
        if topic_id is None:
            return stored
        if stored is not None and stored != topic_id:
            raise errors.KafkaStorageError(
                f"{self.directory} belongs to topic id {stored}, not {topic_id}"
            )
        if stored is None:
            write_partition_metadata(self.directory, topic_id)
        return topic_id

    def _new_segment(self, base_offset: int, now_ms: int) -> LogSegment:
        self._directory_unsynced = True
        return LogSegment(self.directory, base_offset, self.config.segment_settings(),
                          active=True, created_ms=now_ms)

    def _rebuild_producer_state(self) -> None:
        """Load the newest snapshot and replay batch headers from there to the end.

        Segments whose aborted-transaction index was lost (recovered, or swapped in by an
        interrupted compaction) get it rebuilt here: replay then starts no later than the
        first of them, and their ABORT markers are indexed again as they are replayed."""
        state = self.producer_state
        rebuild = [s for s in self._segments if s.txn_index_rebuild_needed]
        for segment in rebuild:
            segment.txn_index.reset()
        state.load(self.log_start_offset, self.log_end_offset,
                   rebuild[0].base_offset if rebuild else None)
        start = state.map_end_offset
        for segment in self._segments:
            if segment.next_offset <= start:
                continue
            reindex = segment.txn_index_rebuild_needed
            for position, header in segment.headers_from(start):
                if header.last_offset >= start:
                    completed = state.update(header, marker_at(segment.fd, position, header))
                    if completed is not None and reindex:
                        self._index_if_aborted(segment, completed)
            segment.txn_index_rebuild_needed = False
        state.map_end_offset = self.log_end_offset

    def _index_if_aborted(self, segment: LogSegment, completed: CompletedTxn) -> None:
        """Record an aborted transaction in the index of the segment holding its marker."""
        if completed.aborted:
            segment.txn_index.append(AbortedTxn(
                completed.producer_id, completed.first_offset, completed.last_offset,
                self.producer_state.stable_offset_after(completed)))

    # -- marks ---------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def segments(self) -> list[LogSegment]:
        """The segments, oldest first, the last one active (a copy: only the log changes
        its list)."""
        return list(self._segments)

    @property
    def inactive_segments(self) -> list[LogSegment]:
        """Every segment but the active one, oldest first (a copy)."""
        return self._segments[:-1]

    def holds(self, segments: list[LogSegment]) -> bool:
        """Whether every one of `segments` is still this log's (none deleted or cut)."""
        present = {id(s) for s in self._segments}
        return all(id(s) in present for s in segments)

    def replace_segment(self, old: LogSegment, cleaned: LogSegment, now_ms: int) -> None:
        """Swap a cleaned copy in for `old` (crash-safe: the `.swap` files are completed on
        load) and schedule `old`'s deletion."""
        cleaned.change_suffix(CLEANED_SUFFIX, SWAP_SUFFIX)
        index = self._segments.index(old)
        self._schedule_delete(old, now_ms)
        cleaned.change_suffix(SWAP_SUFFIX, "")
        self._segments[index] = cleaned

    def mark_cleaned(self, end_offset: int, next_delete_horizon_ms: int | None) -> None:
        """Record a cleaning pass: everything before `end_offset` is clean; the earliest
        tombstone delete horizon it set (None: no tombstone is waiting)."""
        self.first_dirty_offset = end_offset
        self.next_delete_horizon_ms = next_delete_horizon_ms

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def last_stable_offset(self) -> int:
        """The LSO: the first offset of the earliest unfinished transaction, at most the HW
        (and never below the log start, where DeleteRecords or retention may have moved it)."""
        first = self.producer_state.first_unstable_offset(self.high_watermark)
        if first is None or first >= self.high_watermark:
            return self.high_watermark
        return max(first, self.log_start_offset)

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions with data in ``[fetch_offset, upper_bound)``, from the
        aborted-transaction indexes of the segment holding ``fetch_offset`` and later ones."""
        segments = self._segments[self._segment_index_for(fetch_offset):]
        return collect_aborted((s.txn_index for s in segments), fetch_offset, upper_bound)

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    def update_high_watermark(self, offset: int) -> int:
        """Set the HW, clamped to [log start, LEO]; returns the value set."""
        self.high_watermark = min(max(offset, self.log_start_offset), self.log_end_offset)
        return self.high_watermark

    def update_config(self, config: LogConfig) -> None:
        """Apply changed topic configs to the live log.

        Retention, cleanup.policy, flush and validation settings are read from ``config`` at
        their next use. The roll limits (segment.bytes, segment.ms) apply to the active
        segment's next append, as in Kafka, and so does index.interval.bytes;
        segment.index.bytes applies from the next segment on, since the active indexes are
        already allocated.
        """
        self.config = config
        self._jitter_ms = config.random_jitter_ms()
        self._record_policy = RecordPolicy.from_config(config)
        settings = config.segment_settings()
        # Every segment, not only the active one: truncation can make an older one active again.
        for segment in self._segments:
            segment.settings = dataclasses.replace(settings, max_index_size=segment.settings.max_index_size)

    # -- appends -------------------------------------------------------------------------

    def _headers(self, batches: bytes | bytearray) -> list[tuple[int, BatchHeader]]:
        try:
            return list(iter_batches(batches, verify_crc=False))
        except CorruptRecordError as exc:
            raise errors.CorruptMessage(f"{self.name}: {exc}") from None

    @_storage_guarded
    def append_as_leader(self, batches: bytearray, leader_epoch: int, now_ms: int | None = None) -> AppendResult:
        """Validate, assign offsets from the LEO, stamp and write ``batches`` (modified in place).

        A retried idempotent batch is not written again: the result carries its original
        offsets and ``duplicate=True``.
        """
        now_ms = wall_clock_ms() if now_ms is None else now_ms
        # The hot path: one header parse and one CRC pass per batch, one os.write per call.
        # The bookkeeping comes before the CRC pass: reading a megabyte for the CRC (and then
        # writing it) evicts the CPU caches, and Python code run after that runs cold.
        headers = self._headers(batches)
        if not headers:
            return AppendResult(-1, -1, -1, -1, -1, self.log_start_offset)
        for _, header in headers:
            validate_leader_batch(self.name, header, self.config)
        # Records are read only where the topic's policy and the headers call for it.
        validated = validate_records(batches, headers, self._record_policy, now_ms, self.name)
        if validated is not batches:
            batches, headers = validated, self._headers(validated)
            for _, header in headers:
                validate_leader_batch(self.name, header, self.config)  # the new size
        if len(batches) > self.config.segment_bytes:
            raise errors.RecordListTooLarge(
                f"{self.name}: {len(batches)} bytes exceed segment.bytes {self.config.segment_bytes}"
            )
        idempotent = False
        count = 0
        for _, header in headers:
            count += header.records_count
            idempotent = idempotent or header.producer_id >= 0
        if idempotent:
            for _, header in headers:
                if header.producer_id >= 0:
                    duplicate = self.producer_state.find_duplicate(header)
                    if duplicate is not None:
                        return AppendResult(duplicate.first_offset, duplicate.last_offset, duplicate.timestamp,
                                            duplicate.last_offset, -1, self.log_start_offset, duplicate=True)
            self.producer_state.validate(h for _, h in headers)
        append_time = now_ms if self.config.log_append_time else None
        first_offset = offset = self.log_end_offset
        max_ts, max_ts_offset = -1, -1
        entries: list[tuple[int, int, int, int]] = []
        for pos, header in headers:
            # Base offset and leader epoch lie outside the CRC span: stamping them first is safe.
            stamp_offsets(batches, pos, offset, leader_epoch)
            ts = header.max_timestamp if append_time is None else append_time
            last = offset + header.last_offset_delta
            if ts > max_ts:
                max_ts, max_ts_offset = ts, last
            entries.append((pos, last, ts, header.size))
            offset = last + 1
        # A roll decided before the CRC pass is harmless if the CRC then fails: it only starts,
        # a little early, the segment the next append would start anyway.
        self._maybe_roll(len(batches), offset - 1, now_ms)
        for pos, header in headers:
            if not crc_is_valid(batches, pos, header):
                raise errors.CorruptMessage(f"{self.name}: CRC mismatch in batch at position {pos}")
        if append_time is not None:
            for pos, header in headers:
                stamp_log_append_time(batches, pos, header, append_time)
        if leader_epoch >= 0 and leader_epoch > self.epoch_cache.latest_epoch:
            self.epoch_cache.assign(leader_epoch, first_offset)
        try:
            self.active_segment.append_indexed(batches, entries)
        except OSError as exc:
            raise errors.KafkaStorageError(f"{self.name}: write failed: {exc}") from exc
        if idempotent:
            for pos, header in headers:
                if header.producer_id >= 0:
                    self.producer_state.update(parse_header(batches, pos))
        self.producer_state.map_end_offset = offset
        self._after_write(count, now_ms)
        return AppendResult(first_offset, offset - 1, max_ts, max_ts_offset,
                            append_time if append_time is not None else -1,
                            self.log_start_offset, count)

    @_storage_guarded
    def append_as_follower(self, batches: bytes | bytearray | memoryview, now_ms: int | None = None) -> AppendResult:
        """Append batches fetched from the leader, keeping the leader's offsets.

        A partial batch at the end (a fetch cut by max_bytes) is ignored, as Kafka's follower
        does. Offsets must start at or after the LEO.
        """
        now_ms = wall_clock_ms() if now_ms is None else now_ms
        view = memoryview(batches)
        end = 0
        while (size := peek_batch_size(view, end)) is not None and end + size <= len(view):
            end += size
        whole = view[:end]
        headers = self._headers(whole)
        if not headers:
            return AppendResult(-1, -1, -1, -1, -1, self.log_start_offset)
        expected = self.log_end_offset
        for pos, header in headers:
            if header.base_offset < expected:
                raise errors.UnexpectedAppendOffset(
                    f"{self.name}: follower batch at offset {header.base_offset} is below {expected}"
                )
            if not crc_is_valid(whole, pos, header):
                raise errors.CorruptMessage(f"{self.name}: CRC mismatch in batch at offset {header.base_offset}")
            expected = header.next_offset
        first, last = headers[0][1], headers[-1][1]
        self._maybe_roll(end, last.last_offset, now_ms, first.base_offset)
        for _, header in headers:
            epoch = header.partition_leader_epoch
            if epoch >= 0 and epoch > self.epoch_cache.latest_epoch:
                self.epoch_cache.assign(epoch, header.base_offset)
        records = sum(h.records_count for _, h in headers)
        self._write(whole, headers, records, now_ms)
        max_ts, max_ts_offset = max((h.max_timestamp, h.last_offset) for _, h in headers)
        return AppendResult(first.base_offset, last.last_offset, max_ts, max_ts_offset, -1,
                            self.log_start_offset, records)

    def _write(self, data: bytes | bytearray | memoryview, headers: list[tuple[int, BatchHeader]],
               records: int, now_ms: int) -> None:
        try:
            self.active_segment.append(data, headers)
        except OSError as exc:
            raise errors.KafkaStorageError(f"{self.name}: write failed: {exc}") from exc
        for position, header in headers:
            marker = marker_in(data, position, header) if header.is_control else None
            completed = self.producer_state.update(header, marker)
            if completed is not None:
                self._index_if_aborted(self.active_segment, completed)
        self._after_write(records, now_ms)

    def append_marker(self, committed: bool, producer_id: int, producer_epoch: int,
                      coordinator_epoch: int, leader_epoch: int, now_ms: int | None = None) -> AppendResult:
        """Append a COMMIT or ABORT control batch ending ``producer_id``'s transaction (the
        coordinator's WriteTxnMarkers); an abort goes into the aborted-transaction index."""
        now_ms = wall_clock_ms() if now_ms is None else now_ms
        self.producer_state.check_marker(producer_id, producer_epoch, coordinator_epoch)
        batch = marker_batch(committed, producer_id=producer_id, producer_epoch=producer_epoch,
                             coordinator_epoch=coordinator_epoch, timestamp=now_ms)
        offset = self.log_end_offset
        stamp_offsets(batch, 0, offset, leader_epoch)
        header = parse_header(batch, 0)
        self._maybe_roll(len(batch), offset, now_ms)
        if leader_epoch >= 0 and leader_epoch > self.epoch_cache.latest_epoch:
            self.epoch_cache.assign(leader_epoch, offset)
        self._write(batch, [(0, header)], 1, now_ms)
        return AppendResult(offset, offset, now_ms, offset, -1, self.log_start_offset, 1)

    def _after_write(self, records: int, now_ms: int) -> None:
        """flush.messages: fsync once that many messages are unflushed (1 = every append);
        inside `flush_deferred` the flush is only marked due (`flush_pending`)."""
        self._unflushed_messages += records
        if self._unflushed_messages >= self.config.flush_messages:
            if self._defer_flush:
                self.flush_pending = True
            else:
                self.flush(now_ms)

    @contextmanager
    def flush_deferred(self) -> Iterator[None]:
        """Appends in the block leave a due flush to the caller, who must run
        `broker.log.flush_off_loop` on this log before acknowledging them."""
        self._defer_flush = True
        try:
            yield
        finally:
            self._defer_flush = False

    @_storage_guarded
    def take_flush(self) -> FlushPlan:
        """The first half of a flush off the event loop: write out pending index entries and
        take the descriptors to fsync. `flushed(plan)` completes it after the fsyncs."""
        fds: list[int] = []
        try:
            for segment in self._segments:
                if segment.next_offset > self.recovery_point or segment.unflushed:
                    fds += segment.take_unflushed()
            if self._directory_unsynced:
                fds.append(os.open(self.directory, os.O_RDONLY))
                self._directory_unsynced = False
            if self._parent_unsynced:
                fds.append(os.open(self.directory.parent, os.O_RDONLY))
                self._parent_unsynced = False
        except BaseException:
            FlushPlan(fds, 0, 0.0).close()
            raise
        plan = FlushPlan(fds, self.log_end_offset, time.perf_counter())
        self._unflushed_messages = 0
        self.flush_pending = False
        return plan

    def flushed(self, plan: FlushPlan) -> None:
        """Everything below `plan`'s log end offset is on disk: move the recovery point."""
        self.recovery_point = max(self.recovery_point, plan.log_end_offset)
        self._last_flush_ms = wall_clock_ms()
        if self.flush_time_ms is not None:
            self.flush_time_ms.observe((time.perf_counter() - plan.started) * 1000)

    def storage_failed(self, exc: OSError) -> errors.KafkaStorageError:
        """Take the log offline for an I/O error met outside its own methods."""
        failure = errors.KafkaStorageError(f"{self.name}: {exc}")
        self._storage_failed(failure)
        return failure

    def _maybe_roll(self, size: int, last_offset: int, now_ms: int, base_offset: int | None = None) -> None:
        segment = self.active_segment
        config = self.config
        reason = None
        if segment.is_full_for(size):
            reason = "segment.bytes"
        elif segment.size > 0 and now_ms - segment.rolling_base_ms() > config.segment_ms - self._jitter_ms:
            reason = "segment.ms"
        elif segment.indexes_full():
            reason = "index full"
        elif last_offset - segment.base_offset > _INT32_MAX:
            reason = "relative offset overflow"
        elif base_offset is not None and segment.size == 0 and base_offset != segment.base_offset:
            reason = "follower offset gap"
        if reason is not None:
            self.roll(now_ms, base_offset, reason=reason)

    @_storage_guarded
    def roll(self, now_ms: int | None = None, base_offset: int | None = None, *, reason: str = "requested") -> LogSegment:
        """Start a new active segment at ``base_offset`` (default: the LEO)."""
        now_ms = wall_clock_ms() if now_ms is None else now_ms
        base = self.log_end_offset if base_offset is None else base_offset
        old = self.active_segment
        if old.size == 0:
            # An empty active segment is simply replaced (or kept when the base matches).
            if old.base_offset == base:
                return old
            self._segments.pop()
            old.close_and_delete()
        else:
            old.become_inactive()
            old.flush()
            self.recovery_point = max(self.recovery_point, old.next_offset)
            self.producer_state.take_snapshot()
        segment = self._new_segment(base, now_ms)
        self._segments.append(segment)
        self._jitter_ms = self.config.random_jitter_ms()
        logger.debug("%s: rolled new segment at %d (%s)", self.name, base, reason)
        return segment

    @_storage_guarded
    def flush(self, now_ms: int | None = None) -> None:
        """fsync everything up to the LEO and move the recovery point there."""
        started = time.perf_counter()
        for segment in self._segments:
            if segment.next_offset > self.recovery_point or segment.unflushed:
                segment.flush()
        if self._directory_unsynced:
            fsync_dir(self.directory)
            self._directory_unsynced = False
        if self._parent_unsynced:
            fsync_dir(self.directory.parent)
            self._parent_unsynced = False
        self.recovery_point = self.log_end_offset
        self._unflushed_messages = 0
        self._last_flush_ms = wall_clock_ms() if now_ms is None else now_ms
        if self.flush_time_ms is not None:
            self.flush_time_ms.observe((time.perf_counter() - started) * 1000)

    def flush_if_due(self, now_ms: int) -> bool:
        """Flush when flush.ms has passed with unflushed data; returns whether it did."""
        if self._unflushed_messages and now_ms - self._last_flush_ms >= self.config.flush_ms:
            self.flush(now_ms)
            return True
        return False

    # -- reads ---------------------------------------------------------------------------

    def _segment_index_for(self, offset: int) -> int:
        bases = [s.base_offset for s in self._segments]
        return max(bisect.bisect_right(bases, offset) - 1, 0)

    @_storage_guarded
    def read(self, offset: int, max_bytes: int, upper_bound: UpperBound = UpperBound.HW,
             min_one_batch: bool = True) -> ReadResult:
        """Batches from the one holding ``offset``, at most ``max_bytes`` (but one whole batch
        when ``min_one_batch``), never past ``upper_bound``. A read to the LSO also says up to
        which offset its batches can reach (``upper_offset``), for the aborted transactions."""
        leo = self.log_end_offset
        if offset < self.log_start_offset or offset > leo:
            raise errors.OffsetOutOfRange(
                f"{self.name}: offset {offset} is outside [{self.log_start_offset}, {leo}]"
            )
        lso = self.last_stable_offset
        bound = leo if upper_bound is UpperBound.LEO else lso if upper_bound is UpperBound.LSO else self.high_watermark
        marks = (self.high_watermark, leo, self.log_start_offset, lso)
        if offset < bound:
            first = self._segment_index_for(offset)
            for n, segment in enumerate(self._segments[first:], first):
                if segment.base_offset >= bound:
                    break
                max_position = segment.size
                if bound < segment.next_offset:
                    found = segment.translate_offset(bound)
                    max_position = found[0] if found else segment.size
                result = segment.read(offset, max_bytes, max_position, min_one_batch)
                if result is not None:
                    if not result.size:
                        return ReadResult(offset, *marks)
                    if upper_bound is not UpperBound.LSO:
                        return ReadResult(offset, *marks, ranges=(result,))
                    if not any(s.txn_index.entries for s in self._segments[n:]):
                        # No aborted transaction to bound the search for: skip the lookup.
                        return ReadResult(offset, *marks, ranges=(result,), upper_offset=bound)
                    upper = segment.offset_index.offset_from_position(result.position + result.size)
                    if upper is None:
                        upper = self._segments[n + 1].base_offset if n + 1 < len(self._segments) else leo
                    return ReadResult(offset, *marks, ranges=(result,), upper_offset=min(upper, bound))
        return ReadResult(offset, *marks)

    def read_bytes(self, offset: int, max_bytes: int, upper_bound: UpperBound = UpperBound.HW,
                   min_one_batch: bool = True) -> bytes:
        """The bytes :meth:`read` would send."""
        return self.read(offset, max_bytes, upper_bound, min_one_batch).read_bytes()

    # -- truncation and log start --------------------------------------------------------

    def _schedule_delete(self, segment: LogSegment, now_ms: int) -> None:
        """Rename to .deleted now; close and unlink after file.delete.delay.ms (readers may
        still hold the fd)."""
        if segment.offset_index.writable:
            segment.become_inactive()
        segment.change_suffix(segment.suffix, DELETED_SUFFIX)
        self._pending_deletes.append((now_ms + self.config.file_delete_delay_ms, segment))

    def delete_pending_files(self, now_ms: int, *, force: bool = False) -> int:
        """Close and unlink segments whose delete delay has passed; returns how many."""
        due = [(t, s) for t, s in self._pending_deletes if force or t <= now_ms]
        for item in due:
            self._pending_deletes.remove(item)
            item[1].close_and_delete()
        return len(due)

    @_storage_guarded
    def truncate_to(self, offset: int, now_ms: int | None = None) -> bool:
        """Remove every batch with offsets >= ``offset``; returns whether anything changed."""
        now_ms = wall_clock_ms() if now_ms is None else now_ms
        if offset >= self.log_end_offset:
            return False
        if offset < self.log_start_offset:
            self.truncate_fully_and_start_at(offset, now_ms)
            return True
        logger.info("%s: truncating to offset %d", self.name, offset)
        self.truncations += 1
        while len(self._segments) > 1 and self._segments[-1].base_offset > offset:
            self._schedule_delete(self._segments.pop(), now_ms)
        active = self.active_segment
        active.offset_index.make_writable()
        active.time_index.make_writable()
        active.truncate_to(offset)
        self._after_truncation()
        return True

    @_storage_guarded
    def truncate_fully_and_start_at(self, offset: int, now_ms: int | None = None) -> None:
        """Delete every segment and restart the log, empty, at ``offset``."""
        now_ms = wall_clock_ms() if now_ms is None else now_ms
        logger.info("%s: truncating fully, restarting at offset %d", self.name, offset)
        self.truncations += 1
        for segment in self._segments:
            self._schedule_delete(segment, now_ms)
        self._segments = [self._new_segment(offset, now_ms)]
        self.log_start_offset = offset
        self.high_watermark = offset
        self.recovery_point = offset
        self.first_dirty_offset = offset
        self.epoch_cache.clear()
        self.producer_state.truncate_snapshots_after(-1)
        self._rebuild_producer_state()

    def _after_truncation(self) -> None:
        leo = self.log_end_offset
        self.high_watermark = min(self.high_watermark, leo)
        self.recovery_point = min(self.recovery_point, leo)
        self.first_dirty_offset = min(self.first_dirty_offset, leo)
        self.epoch_cache.truncate_from_end(leo)
        self._rebuild_producer_state()

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to ``offset`` (-1 means the HW).

        Segments wholly below it go at the next retention run. Returns the new log start.
        """
        if offset == -1:
            offset = self.high_watermark
        if offset > self.high_watermark or offset < 0:
            raise errors.OffsetOutOfRange(
                f"{self.name}: cannot delete records before {offset}, the high watermark is {self.high_watermark}"
            )
        if offset > self.log_start_offset:
            self.log_start_offset = offset
            self.first_dirty_offset = max(self.first_dirty_offset, offset)
            self.epoch_cache.truncate_from_start(offset)
        return self.log_start_offset

    # -- retention -----------------------------------------------------------------------

    def delete_old_segments(self, now_ms: int) -> int:
        """Apply retention.ms, retention.bytes and the log start offset; returns segments deleted.

        Only whole non-active segments below the high watermark are deleted.
        """
        config = self.config
        deleted = 0
        if config.delete and config.retention_ms >= 0:
            deleted += self.delete_segments(self._deletable_prefix(
                lambda s, _: now_ms - s.largest_timestamp() > config.retention_ms),
                now_ms, "retention.ms")
        if config.delete and config.retention_bytes >= 0:
            # Measured after the time-based pass, so its deletions count towards the limit.
            excess = self.size_in_bytes - config.retention_bytes

            def over_size(segment: LogSegment, _: int) -> bool:
                nonlocal excess
                if excess - segment.size >= 0:
                    excess -= segment.size
                    return True
                return False

            deleted += self.delete_segments(self._deletable_prefix(over_size), now_ms,
                                            "retention.bytes")
        deleted += self.delete_segments(
            self._deletable_prefix(lambda _, upper: upper <= self.log_start_offset), now_ms,
            "log start offset")
        if self.producer_state.remove_expired(now_ms, PRODUCER_ID_EXPIRATION_MS):
            logger.debug("%s: expired idle producer ids", self.name)
        return deleted

    def _deletable_prefix(self, may_go: Callable[[LogSegment, int], bool]) -> list[LogSegment]:
        """The oldest non-active segments below the HW for which `may_go(segment, base
        offset of the next segment)` holds, up to the first that fails (retention never
        leaves a hole in the log)."""
        chosen = []
        segments = self._segments
        for n, segment in enumerate(segments[:-1]):
            upper = segments[n + 1].base_offset
            if upper > self.high_watermark or not may_go(segment, upper):
                break
            chosen.append(segment)
        return chosen

    def delete_segments(self, doomed: list[LogSegment], now_ms: int, reason: str) -> int:
        """Take the oldest segments `doomed` out of the log (deleted after the delay); moves the
        log start offset past them. Returns how many."""
        if not doomed:
            return 0
        for segment in doomed:
            self._segments.remove(segment)
            self._schedule_delete(segment, now_ms)
        new_start = self._segments[0].base_offset
        logger.info("%s: deleted %d segment(s) by %s; log start now %d", self.name, len(doomed), reason,
                    max(self.log_start_offset, new_start))
        if new_start > self.log_start_offset:
            self.log_start_offset = new_start
            self.epoch_cache.truncate_from_start(new_start)
        self.first_dirty_offset = max(self.first_dirty_offset, self.log_start_offset)
        self.producer_state.delete_snapshots_before(self._segments[0].base_offset)
        return len(doomed)

    # -- lookups by time -----------------------------------------------------------------

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(timestamp, offset) of the first record with timestamp >= ``timestamp``, or None.

        Kafka's special values: -2 earliest, -1 latest (the LEO), -3 max timestamp.
        """
        return offset_for_timestamp(self._segments, self.log_start_offset, self.log_end_offset,
                                    timestamp)

    # -- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Flush, snapshot producer state at the LEO, trim indexes and close every file."""
        if self.closed:
            return
        self.flush()
        self.producer_state.map_end_offset = self.log_end_offset
        self.producer_state.take_snapshot()
        for segment in self._segments:
            segment.close()
        self.delete_pending_files(0, force=True)
        self.closed = True

    def close_and_remove_files(self) -> None:
        """Close every file and delete the whole directory's contents (topic deletion)."""
        for segment in self._segments:
            segment.close_and_delete()
        self.delete_pending_files(0, force=True)
        self.closed = True
