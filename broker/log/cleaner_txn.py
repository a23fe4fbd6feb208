"""What compaction does with transactions (Kafka's CleanedTransactionMetadata).

Walking a cleaning range in offset order, with the aborted transactions of the range (from
the aborted-transaction indexes), it says of each batch:

- a data batch of an aborted transaction is removed (and its keys never enter the key map);
- an ABORT marker stays, and its index entry with it, while the pass still saw data of its
  transaction; once none is left the marker may go;
- a COMMIT marker may go once no data of its transaction is left in the log.

A marker that may go gets a delete horizon (now + delete.retention.ms) first, and is removed
by a later pass once the horizon passed, so that a consumer reading meanwhile still sees it.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Iterable

from broker.log.markers import Marker, marker_in
from broker.log.txn_index import AbortedTxn
from clients.records.batch import decode_batch, encode_batch
from clients.records.errors import RecordsError
from clients.records.header import DELETE_HORIZON_MASK, BatchHeader

logger = logging.getLogger(__name__)


class _AbortedProgress:
    __slots__ = ("txn", "saw_data")

    def __init__(self, txn: AbortedTxn) -> None:
        self.txn = txn
        self.saw_data = False


class CleanedTransactions:
    """Transaction state of one cleaning walk; feed it every batch in offset order."""

    def __init__(self, aborted: Iterable[AbortedTxn]) -> None:
        self._aborted = deque(sorted(aborted, key=lambda t: t.first_offset))
        self._ongoing_aborted: dict[int, _AbortedProgress] = {}
        self._ongoing_committed: set[int] = set()
        # Index entries of ABORT markers retained since the last `take_index_entries`.
        self._kept_entries: list[AbortedTxn] = []

    def _start_aborted_up_to(self, offset: int) -> None:
        while self._aborted and self._aborted[0].first_offset <= offset:
            txn = self._aborted.popleft()
            self._ongoing_aborted.setdefault(txn.producer_id, _AbortedProgress(txn))

    def on_data_batch(self, header: BatchHeader) -> bool:
        """Whether the data batch belongs to an aborted transaction (so it is discarded)."""
        self._start_aborted_up_to(header.last_offset)
        if not header.is_transactional:
            return False
        progress = self._ongoing_aborted.get(header.producer_id)
        if progress is not None:
            progress.saw_data = True
            return True
        self._ongoing_committed.add(header.producer_id)
        return False

    def on_marker(self, header: BatchHeader, marker: Marker | None) -> bool:
        """Whether the control batch may be removed (once its delete horizon passed)."""
        self._start_aborted_up_to(header.last_offset)
        if marker is None:
            return header.records_count == 0  # an empty control batch was cleaned already
        committed, _ = marker
        pid = header.producer_id
        if committed:
            if pid in self._ongoing_committed:
                self._ongoing_committed.discard(pid)
                return False
            return True
        progress = self._ongoing_aborted.pop(pid, None)
        if progress is not None and progress.saw_data:
            self._kept_entries.append(progress.txn)
            return False
        return True

    def take_index_entries(self) -> list[AbortedTxn]:
        """The aborted-transaction index entries of the markers retained since last asked."""
        entries, self._kept_entries = self._kept_entries, []
        return entries


def rewrite_marker(original: bytes, header: BatchHeader, now_ms: int, delete_retention_ms: int,
                   txns: CleanedTransactions, producers_last: bool) -> bytes | None:
    """The cleaned form of a control batch: as it is while its transaction has data left;
    then with a delete horizon; None (removed) once that passed, unless it is its producer's
    last batch (`producers_last`: it holds the producer's current epoch)."""
    if not txns.on_marker(header, marker_in(original, 0, header)):
        return original
    if header.attributes & DELETE_HORIZON_MASK:
        if header.base_timestamp <= now_ms and not producers_last:
            return None
        return original
    try:
        batch = decode_batch(original)
        return encode_batch(
            batch.records, base_offset=header.base_offset,
            timestamp_type=1 if header.is_log_append_time else 0,
            producer_id=header.producer_id, producer_epoch=header.producer_epoch,
            partition_leader_epoch=header.partition_leader_epoch, is_transactional=True,
            is_control=True, last_offset_delta=header.last_offset_delta,
            delete_horizon_ms=now_ms + delete_retention_ms)
    except RecordsError as exc:
        logger.warning("cannot re-encode the marker at offset %d, kept as is: %s",
                       header.base_offset, exc)
        return original
