"""Record batches for data-plane tests."""

from __future__ import annotations

import time
from typing import Sequence

from clients.records.batch import encode_batch, iter_record_batches
from clients.records.header import peek_batch_size
from clients.records.record import Record


def now_ms() -> int:
    return int(time.time() * 1000)


def batch(values: Sequence[bytes] = (b"v",), *, timestamp: int | None = None,
          producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
          compression: int = 0) -> bytes:
    ts = now_ms() if timestamp is None else timestamp
    records = [Record(None, ts, b"k%d" % i, v) for i, v in enumerate(values)]
    return encode_batch(records, producer_id=producer_id, producer_epoch=producer_epoch,
                        base_sequence=base_sequence, compression=compression)


def values_of(data: bytes | bytearray | memoryview) -> list[tuple[int, bytes | None]]:
    """(offset, value) of every record in the whole batches of `data` (a partial last batch,
    as a fetch cut by max_bytes returns, is skipped like clients do)."""
    raw = bytes(data)
    end = 0
    while (size := peek_batch_size(raw, end)) is not None and end + size <= len(raw):
        end += size
    return [(r.offset, r.value) for b in iter_record_batches(raw[:end])  # type: ignore[misc]
            for r in b.records]


def produce_body(topic: str, records: bytes | None, *, partition: int = 0, acks: int = -1,
                 timeout_ms: int = 5000) -> dict:
    return {"acks": acks, "timeout_ms": timeout_ms, "transactional_id": None,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition,
                                                               "records": records}]}]}


def fetch_body(topic: str, offset: int = 0, *, partition: int = 0, max_wait_ms: int = 0,
               min_bytes: int = 1, max_bytes: int = 50 << 20,
               partition_max_bytes: int = 1 << 20, **partition_fields: int) -> dict:
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes,
            "max_bytes": max_bytes, "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [
                {"partition": partition, "fetch_offset": offset, "log_start_offset": -1,
                 "partition_max_bytes": partition_max_bytes, **partition_fields}]}],
            "forgotten_topics_data": [], "rack_id": ""}


def only_partition(response: dict, topics_key: str = "responses",
                   partitions_key: str = "partition_responses") -> dict:
    return response[topics_key][0][partitions_key][0]
