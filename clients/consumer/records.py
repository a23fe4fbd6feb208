"""Consumer records and the parsing of one partition's fetched bytes (pure)."""

from __future__ import annotations

import gc
import logging
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, NamedTuple

from clients.records.batch import CREATE_TIME, LOG_APPEND_TIME, decode_batch
from clients.records.control import ABORT, decode_control_record
from clients.records.errors import CorruptRecordError
from clients.records.header import BATCH_HEADER_SIZE, parse_header, peek_batch_size
from clients.records.record import Header

logger = logging.getLogger(__name__)

TIMESTAMP_TYPE_NAMES = {CREATE_TIME: "CreateTime", LOG_APPEND_TIME: "LogAppendTime"}


class ConsumerRecord(NamedTuple):
    """One consumed record; ``timestamp_type`` is 0 (CreateTime) or 1 (LogAppendTime).

    A named tuple (as kafka-python's) rather than a dataclass: the fetch path makes one per
    record, and the batch decoder builds a tuple in a fraction of the time a frozen
    dataclass takes (``decode_records``' ``rows``)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()

    @property
    def timestamp_type_name(self) -> str:
        return TIMESTAMP_TYPE_NAMES.get(self.timestamp_type, "NoTimestampType")


@dataclass(frozen=True, slots=True)
class ParsedFetch:
    """The records of one partition's fetch at or after the fetch offset, and where the
    next fetch starts. ``truncated`` tells that the data ended in a partial batch."""

    records: list[ConsumerRecord]
    next_offset: int
    truncated: bool


class AbortedFilter:
    """read_committed's client-side filter (Kafka's fetcher): a transactional batch is
    dropped when its producer has an aborted transaction that began at or before the batch
    and whose ABORT marker has not been passed yet. ``aborted`` is the fetch answer's
    aborted_transactions list for the partition."""

    def __init__(self, aborted: Iterable[Mapping[str, Any]]) -> None:
        self._pending = sorted(((int(a["first_offset"]), int(a["producer_id"]))
                                for a in aborted), reverse=True)
        self._aborting: set[int] = set()

    def skips(self, producer_id: int, is_transactional: bool, last_offset: int) -> bool:
        """Whether a data batch ending at ``last_offset`` belongs to an aborted transaction."""
        pending = self._pending
        while pending and pending[-1][0] <= last_offset:
            self._aborting.add(pending.pop()[1])
        return is_transactional and producer_id in self._aborting

    def passed_marker(self, producer_id: int, last_offset: int, is_abort: bool) -> None:
        """A control batch: an ABORT marker ends its producer's aborted transaction."""
        self.skips(producer_id, True, last_offset)
        if is_abort:
            self._aborting.discard(producer_id)


def parse_fetched_records(topic: str, partition: int, data: bytes | memoryview | None,
                          fetch_offset: int, *, verify_crc: bool = True,
                          aborted: Iterable[Mapping[str, Any]] | None = None) -> ParsedFetch:
    """Decode the complete batches of ``data``.

    A broker returns whole batches from the one holding the fetch offset, so records before
    ``fetch_offset`` inside the first batch are skipped (Kafka's rule), and a size limit may
    cut the last batch: that partial tail is ignored and fetched again next time. Control
    batches advance the position but yield no records. Raises CorruptRecordError for a
    bad batch (CRC mismatch when ``verify_crc``). With ``aborted`` (the aborted
    transactions of a read_committed fetch), batches of aborted transactions are dropped.
    """
    if not data:
        return ParsedFetch([], fetch_offset, False)
    # Each record is a ConsumerRecord, which the cyclic garbage collector tracks for as long
    # as it lives (it untracks plain tuples only): a collection every 700 of them, each
    # walking the records made so far, cost a fifth of a consumer's time. Paused for the
    # burst, it runs once afterwards.
    if not gc.isenabled():
        return _decode_fetched(topic, partition, data, fetch_offset, verify_crc, aborted)
    gc.disable()
    try:
        return _decode_fetched(topic, partition, data, fetch_offset, verify_crc, aborted)
    finally:
        gc.enable()


def _decode_fetched(topic: str, partition: int, data: bytes | memoryview, fetch_offset: int,
                    verify_crc: bool, aborted: Iterable[Mapping[str, Any]] | None
                    ) -> ParsedFetch:
    view = memoryview(data)
    end = len(view)
    pos = 0
    next_offset = fetch_offset
    out: list[ConsumerRecord] = []
    truncated = False
    filter_ = AbortedFilter(aborted) if aborted is not None else None
    while pos < end:
        size = peek_batch_size(view, pos)
        if size is None or size < BATCH_HEADER_SIZE or pos + size > end:
            truncated = True
            break
        header = parse_header(view, pos)
        if header.is_control:
            batch = decode_batch(view, pos, verify_crc=verify_crc)
        else:
            # Data batches decode straight into ConsumerRecords, in one pass.
            timestamp_type = LOG_APPEND_TIME if header.is_log_append_time else CREATE_TIME
            batch = decode_batch(view, pos, verify_crc=verify_crc,
                                 rows=(ConsumerRecord, topic, partition, timestamp_type))
        pos += size
        if header.next_offset <= next_offset:
            continue
        if filter_ is not None:
            if header.is_control:
                is_abort = bool(batch.records) and \
                    decode_control_record(batch.records[0]).type == ABORT
                filter_.passed_marker(header.producer_id, header.last_offset, is_abort)
            elif filter_.skips(header.producer_id, header.is_transactional,
                               header.last_offset):
                next_offset = header.next_offset
                continue
        if not header.is_control:
            records = batch.records
            if header.base_offset < next_offset:
                records = [r for r in records if r.offset >= next_offset]
            out.extend(records)
        next_offset = header.next_offset
    return ParsedFetch(out, next_offset, truncated)


def fetched_next_offset(data: bytes | memoryview | None, fetch_offset: int) -> int:
    """The offset after the last complete batch of ``data`` (where the next fetch starts),
    read from batch headers alone: the records are decoded later, when they are needed."""
    if not data:
        return fetch_offset
    view = memoryview(data)
    end = len(view)
    pos = 0
    next_offset = fetch_offset
    while pos < end:
        size = peek_batch_size(view, pos)
        if size is None or size < BATCH_HEADER_SIZE or pos + size > end:
            break
        next_offset = max(next_offset, parse_header(view, pos).next_offset)
        pos += size
    return next_offset


__all__ = ["ConsumerRecord", "CorruptRecordError", "ParsedFetch", "fetched_next_offset",
           "parse_fetched_records"]
