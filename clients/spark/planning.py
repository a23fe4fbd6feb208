"""Planning on the driver: where each partition starts and ends, and the Spark tasks
(``KafkaInputPartition``) that carry everything an executor needs to read its range."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from pyspark.sql.datasource import InputPartition

from clients.spark.cluster import ClusterClient
from clients.spark.offsets import OffsetRange, PartitionOffsets, TopicPartition, split_ranges
from clients.spark.options import EARLIEST, LATEST, OffsetSpec, SourceOptions, SparkOptionError


class DataLossError(RuntimeError):
    """Offsets a query was to read are gone (retention, deletion) and failOnDataLoss=true."""


DATA_LOSS_HINT = ("Some data may have been lost: it was deleted by retention or the "
                  "topic was deleted. Set the option failOnDataLoss=false to skip it instead.")


@dataclass(frozen=True)
class ReadSettings:
    """What every task of a query shares: client settings and the read's behaviour."""

    kafka: dict[str, str]
    include_headers: bool
    read_committed: bool
    fail_on_data_loss: bool
    poll_timeout_ms: int

    @classmethod
    def from_options(cls, options: SourceOptions) -> ReadSettings:
        return cls(dict(options.kafka), options.include_headers, options.read_committed,
                   options.fail_on_data_loss, options.poll_timeout_ms)


@dataclass(frozen=True)
class KafkaInputPartition(InputPartition):
    """One Spark task: records ``[start, end)`` of one partition, with the leader seen at
    planning (a hint: the task asks the cluster again if it moved)."""

    topic: str
    partition: int
    start: int
    end: int
    leader: tuple[int, str, int] | None
    settings: ReadSettings


def resolve(client: ClusterClient, spec: OffsetSpec, tps: Iterable[TopicPartition],
            is_start: bool, strategy: str = "error") -> PartitionOffsets:
    """Concrete offsets for ``spec`` on each of ``tps``. Partitions a JSON spec leaves out
    start at earliest and end at latest. A start by timestamp with no record at or after it
    is an error, or latest with ``strategy=latest``; an end by timestamp without one is latest."""
    tps = list(tps)
    default = EARLIEST if is_start else LATEST
    name = "starting" if is_start else "ending"
    if spec.kind in ("earliest", "latest"):
        return client.list_offsets({tp: EARLIEST if spec.kind == "earliest" else LATEST
                                    for tp in tps})
    if spec.kind == "offsets":
        queries: dict[TopicPartition, int] = {}
        exact: PartitionOffsets = {}
        for tp in tps:
            given = spec.offsets.get(tp[0], {}).get(tp[1], default)
            if given in (EARLIEST, LATEST):
                queries[tp] = given
            elif given < 0:
                raise SparkOptionError(f"option '{name}Offsets': {tp[0]}-{tp[1]} has an "
                                       f"invalid offset {given}")
            else:
                exact[tp] = given
        exact.update(client.list_offsets(queries))
        return exact
    stamps: dict[TopicPartition, int] = {}
    fallback: dict[TopicPartition, int] = {}
    for tp in tps:
        if spec.kind == "timestamp":
            assert spec.timestamp is not None
            stamps[tp] = spec.timestamp
            continue
        ts = spec.timestamps.get(tp[0], {}).get(tp[1])
        if ts is None:
            fallback[tp] = default
        else:
            stamps[tp] = ts
    found = client.list_offsets(stamps)
    missing = [tp for tp, offset in found.items() if offset < 0]
    if missing and is_start and strategy == "error":
        tp = missing[0]
        option = ("startingTimestamp" if spec.kind == "timestamp"
                  else "startingOffsetsByTimestamp")
        raise SparkOptionError(f"option '{option}': {tp[0]}-{tp[1]} has no record at or after "
                               f"timestamp {stamps[tp]}; set startingOffsetsByTimestampStrategy"
                               "=latest to start at the latest offset instead")
    for tp in missing:
        fallback[tp] = LATEST
        del found[tp]
    found.update(client.list_offsets(fallback))
    return found


def offset_ranges(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
                  fail_on_data_loss: bool) -> list[OffsetRange]:
    """A range per partition of ``end``; a start after the end is an error (or skipped)."""
    ranges: list[OffsetRange] = []
    for tp in sorted(end):
        first, last = start.get(tp, end[tp]), end[tp]
        if first > last:
            if fail_on_data_loss:
                raise DataLossError(f"partition {tp[0]}-{tp[1]}: the start offset {first} is "
                                    f"after the end offset {last}. {DATA_LOSS_HINT}")
            continue
        ranges.append(OffsetRange(tp[0], tp[1], first, last))
    return ranges


def tasks(client: ClusterClient, ranges: Iterable[OffsetRange], options: SourceOptions
          ) -> list[KafkaInputPartition]:
    """Spark tasks for ``ranges``, cut by minPartitions and maxRecordsPerPartition."""
    settings = ReadSettings.from_options(options)
    out: list[KafkaInputPartition] = []
    for r in split_ranges(ranges, options.min_partitions, options.max_records_per_partition):
        node = client.cluster.leader_for(r.topic, r.partition)
        leader = None if node is None else (node.node_id, node.host, node.port)
        out.append(KafkaInputPartition(r.topic, r.partition, r.start, r.end, leader, settings))
    return out
