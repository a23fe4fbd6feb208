"""The streaming reader: Kafka-JSON offsets, partitions re-listed every trigger, read limits,
Trigger.AvailableNow, and offsets committed to the query's consumer group."""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any, Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from clients.spark.cluster import ClusterClient
from clients.spark.offsets import (
    PartitionOffsets,
    available_records,
    from_json_offsets,
    rate_limit,
    to_json_offsets,
)
from clients.spark.options import SourceOptions
from clients.spark.planning import DATA_LOSS_HINT, DataLossError, offset_ranges, resolve, tasks
from clients.spark.reader import check_assigned, open_client, read_partition

logger = logging.getLogger(__name__)


class RaftkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("raftka")``. The driver keeps one instance per query run;
    executors get a pickled copy without the connection."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        # Spark's Kafka source also makes a fresh group id per query run.
        self.group_id = options.group_id or f"{options.group_id_prefix}-{uuid.uuid4()}"
        self._client: ClusterClient | None = None
        self._target: PartitionOffsets | None = None   # Trigger.AvailableNow's end
        self._latest: PartitionOffsets | None = None
        self._last_batch_at = time.monotonic()
        self._committed: PartitionOffsets | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None
        return state

    @property
    def client(self) -> ClusterClient:
        if self._client is None:
            self._client = open_client(self.options)
        return self._client

    def _partitions(self) -> list[tuple[str, int]]:
        found = self.client.partitions(self.options.selection)
        check_assigned(self.options, found)
        return found

    def initialOffset(self) -> dict:
        start = resolve(self.client, self.options.starting, self._partitions(), True,
                        self.options.by_timestamp_strategy)
        return to_json_offsets(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.client.latest(self._partitions())

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        # Spark asks for the next batch only once the batch ending at ``start`` is done, but
        # calls commit(end) only when it starts another one: committing ``start`` here too
        # lets an idle or finished query show lag 0.
        self._commit_group(from_json_offsets(start))
        begin = self._with_current_partitions(from_json_offsets(start))
        latest = self.client.latest(begin)
        if self._target is not None:
            latest = {tp: min(offset, self._target.get(tp, begin[tp]))
                      for tp, offset in latest.items()}
        latest = {tp: max(offset, begin[tp]) for tp, offset in latest.items()}
        self._latest = latest
        end = latest
        if not isinstance(limit, ReadAllAvailable):
            if self._waits_for_more(begin, latest):
                return start
            if isinstance(limit, ReadMaxRows):
                end = rate_limit(begin, latest, limit.max_rows)
        if end != begin:
            self._last_batch_at = time.monotonic()
        return to_json_offsets(end)

    def _with_current_partitions(self, begin: PartitionOffsets) -> PartitionOffsets:
        """``begin`` for the partitions that exist now: new ones start at earliest; deleted
        ones fail the query (failOnDataLoss=true) or are dropped."""
        current = self._partitions()
        gone = sorted(set(begin) - set(current))
        if gone:
            names = ", ".join(f"{t}-{p}" for t, p in gone)
            if self.options.fail_on_data_loss:
                raise DataLossError(f"partitions {names} were deleted. {DATA_LOSS_HINT}")
            logger.warning("partitions %s were deleted; no longer reading them", names)
        new = [tp for tp in current if tp not in begin]
        out = {tp: begin[tp] for tp in current if tp in begin}
        if new:
            out.update(self.client.earliest(new))
        return out

    def _waits_for_more(self, begin: PartitionOffsets, latest: PartitionOffsets) -> bool:
        """minOffsetsPerTrigger: hold the trigger until enough records or maxTriggerDelay
        (never under Trigger.AvailableNow, which must finish)."""
        wanted = self.options.min_offsets_per_trigger
        if wanted is None or self._target is not None:
            return False
        waited_ms = (time.monotonic() - self._last_batch_at) * 1000
        return (available_records(begin, latest) < wanted
                and waited_ms < self.options.max_trigger_delay_ms)

    def reportLatestOffset(self) -> dict | None:
        return None if self._latest is None else to_json_offsets(self._latest)

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        begin = from_json_offsets(start)
        stop = from_json_offsets(end)
        new = [tp for tp in stop if tp not in begin]
        if new:
            begin.update(self.client.earliest(new))
        begin = self._skip_deleted_records(begin, stop)
        ranges = offset_ranges(begin, stop, self.options.fail_on_data_loss)
        return list(tasks(self.client, ranges, self.options))

    def _skip_deleted_records(self, begin: PartitionOffsets, stop: PartitionOffsets
                              ) -> PartitionOffsets:
        """Starts below the log start offset: data loss, reported here on the driver."""
        earliest = self.client.earliest(stop)
        out = dict(begin)
        for tp, first in begin.items():
            if tp not in earliest or first >= earliest[tp]:
                continue
            message = (f"partition {tp[0]}-{tp[1]}: offsets {first} to "
                       f"{min(earliest[tp], stop[tp]) - 1} can no longer be read (the log "
                       f"start offset is now {earliest[tp]}). {DATA_LOSS_HINT}")
            if self.options.fail_on_data_loss:
                raise DataLossError(message)
            logger.warning("skipping lost records: %s", message)
            out[tp] = min(earliest[tp], stop[tp])
        return out

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(partition)

    def commit(self, end: dict) -> None:
        """Also store the offsets in the query's consumer group, so lag monitors and
        ``raftka groups --describe`` show how far behind the query is."""
        self._commit_group(from_json_offsets(end))

    def _commit_group(self, offsets: PartitionOffsets) -> None:
        if offsets == self._committed:
            return
        try:
            self.client.commit(self.group_id, offsets)
        except Exception as exc:  # a monitoring aid: never fail the query over it
            logger.warning("could not commit offsets for group %s: %s", self.group_id, exc)
        else:
            self._committed = dict(offsets)

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
