"""Batch builders and log factories shared by the log tests."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from broker.log.config import LogConfig
from broker.log.partition_log import PartitionLog
from clients.records.batch import encode_batch, iter_record_batches
from clients.records.record import Record

NOW = 1_700_000_000_000


def batch(
    values: Sequence[bytes | None] = (b"v",),
    *,
    keys: Sequence[bytes | None] | None = None,
    timestamp: int = NOW,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytearray:
    """An uncompressed batch of one record per value, ready for append_as_leader."""
    keys = keys if keys is not None else [None] * len(values)
    records = [Record(None, timestamp, k, v) for k, v in zip(keys, values)]
    return bytearray(encode_batch(records, producer_id=producer_id, producer_epoch=producer_epoch,
                                  base_sequence=base_sequence))


def open_log(directory: Path, overrides: Mapping[str, str] | None = None, **kwargs: object) -> PartitionLog:
    config = LogConfig.from_overrides(overrides or {})
    kwargs.setdefault("now_ms", NOW)
    return PartitionLog(directory / "topic-0", "topic", 0, config, **kwargs)  # type: ignore[arg-type]


def records_of(data: bytes) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record in whole batches of ``data``."""
    return [(r.offset, r.key, r.value) for b in iter_record_batches(data) for r in b.records]  # type: ignore[misc]


def read_all(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    """Every record from the log start to the LEO, read batch range by batch range."""
    from broker.log.results import UpperBound
    from clients.records.header import iter_batches

    out: list[tuple[int, bytes | None, bytes | None]] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20, UpperBound.LEO).read_bytes()
        if not data:
            break
        out.extend(r for r in records_of(data) if r[0] >= offset)
        offset = [h for _, h in iter_batches(data, verify_crc=False)][-1].next_offset
    return out
