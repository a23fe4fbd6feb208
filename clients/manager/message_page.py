"""The message browser's page: a window of one partition's records, read with a consumer
within the page's deadline."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

import trio

from clients.admin.operations import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from clients.consumer import Consumer, ConsumerRecord
from clients.manager import views
from clients.manager.gather import ClusterReader
from clients.manager.reach import PageReads, Part, seconds
from clients.protocol import KafkaError

TopicPartition = tuple[str, int]
POLL_SLICE_MS = 200
# Kept back from the page's deadline for closing the consumer and rendering.
CLOSE_MARGIN_S = 0.2


@dataclass(frozen=True)
class MessagesPage:
    topic: str
    partition: int
    log_start: int | None  # None: the offsets could not be read
    log_end: int | None
    first: int = 0
    last: int = 0
    records: list[ConsumerRecord] = field(default_factory=list)


async def read_messages(reader: ClusterReader, reads: PageReads, topic: str, partition: int,
                        page_size: int, from_offset: int | None,
                        from_timestamp: int | None) -> MessagesPage:
    """One page of a partition's records: from an offset, from the first record at or
    after a timestamp (ms), or the last ``page_size``."""
    tp = (topic, partition)

    async def log_start() -> int:
        found = (await reader.admin.list_offsets({tp: EARLIEST_TIMESTAMP}))[tp]
        if isinstance(found, KafkaError):
            raise found
        return found.offset

    asks = [(Part("the log start offset", answers=True), log_start),
            (Part("the log end offset"), partial(reader.offsets, [tp], LATEST_TIMESTAMP))]
    if from_timestamp is not None:
        asks.append((Part("the offset of the timestamp"),
                     partial(reader.admin.list_offsets, {tp: from_timestamp})))
    start, ends, *at = await reads.each(asks)
    if start is None or ends is None:
        return MessagesPage(topic, partition, start, None)
    end = ends.get(tp, start)
    if from_timestamp is not None:
        found = (at[0] or {}).get(tp)
        from_offset = (end if found is None or isinstance(found, KafkaError)
                       else found.offset)
    first, last = views.message_window(start, end, page_size, from_offset)
    records = await _read(reader, reads, tp, first, last)
    return MessagesPage(topic, partition, start, end, first, last, records)


async def _read(reader: ClusterReader, reads: PageReads, tp: TopicPartition, first: int,
                last: int) -> list[ConsumerRecord]:
    """Records with offsets in [first, last), as many as arrive before the page's
    deadline; the banner says when some did not."""
    records: list[ConsumerRecord] = []
    if first >= last:
        return records
    started = trio.current_time()
    async with Consumer(reader.client_config(**{"enable.auto.commit": False})) as consumer:
        consumer.assign([tp])
        consumer.seek(tp, first)
        with trio.move_on_at(reads.deadline - CLOSE_MARGIN_S) as scope:
            while not records or records[-1].offset < last - 1:
                batch = await consumer.poll(POLL_SLICE_MS, max_records=last - first)
                records += [r for r in batch if first <= r.offset < last]
        # Offsets without records (transaction markers, compacted away) end a window early.
        position = None
        with trio.move_on_after(0):  # known since the seek; never waits past the deadline
            position = await consumer.position(tp)
        if scope.cancelled_caught and (position is None or position < last):
            upto = records[-1].offset + 1 if records else first
            reads.note(f"records of {tp[0]}-{tp[1]} from offset {upto} did not arrive "
                       f"within {seconds(trio.current_time() - started)}")
    return records
