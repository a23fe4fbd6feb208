"""What each page shows, computed from admin-client answers (pure: no I/O)."""

from __future__ import annotations

import string
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterable, Mapping, Sequence

from clients.admin import BrokerNode, PartitionInfo

TopicPartition = tuple[str, int]
_PRINTABLE = frozenset(string.printable)


@dataclass(frozen=True)
class BrokerRow:
    node_id: int
    host: str
    port: int | None
    rack: str | None
    fenced: bool  # holds replicas but is missing from the cluster's live brokers
    leaders: int | None  # None: the partitions could not be read
    partitions: int | None
    controller: bool


@dataclass(frozen=True)
class PartitionRow:
    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    under_replicated: bool
    offline: bool
    log_start: int | None = None
    log_end: int | None = None
    size: int | None = None  # bytes of the leader's replica


@dataclass(frozen=True)
class TopicRow:
    name: str
    partitions: int
    replication_factor: int
    under_replicated: int
    offline: int
    internal: bool
    size: int | None = None  # bytes of the leaders' replicas


@dataclass(frozen=True)
class LagRow:
    topic: str
    partition: int
    committed: int | None
    log_end: int | None
    lag: int | None
    owner: str  # member id, or "-" when no member owns it


def partition_row(p: PartitionInfo, live: Iterable[int] | None, log_start: int | None = None,
                  log_end: int | None = None, size: int | None = None) -> PartitionRow:
    """Kafka's health flags: under-replicated when the ISR is smaller than the replica set,
    offline when no live broker leads it (when the live brokers are unknown: no leader)."""
    offline = p.leader < 0 or (live is not None and p.leader not in set(live))
    return PartitionRow(p.topic, p.partition, p.leader, p.replicas, p.isr,
                        len(p.isr) < len(p.replicas), offline, log_start, log_end, size)


def broker_rows(brokers: Sequence[BrokerNode], controller_id: int | None,
                partitions: Iterable[PartitionInfo] | None) -> list[BrokerRow]:
    """One row per live broker, plus one per replica id no live broker has (fenced or
    gone), with the partitions each leads and holds (None when the partitions could not
    be read)."""
    if partitions is None:
        return sorted((BrokerRow(b.node_id, b.host, b.port, b.rack, False, None, None,
                                 b.node_id == controller_id) for b in brokers),
                      key=lambda r: r.node_id)
    leaders: dict[int, int] = {}
    held: dict[int, int] = {}
    for p in partitions:
        if p.leader >= 0:
            leaders[p.leader] = leaders.get(p.leader, 0) + 1
        for replica in p.replicas:
            held[replica] = held.get(replica, 0) + 1
    rows = [BrokerRow(b.node_id, b.host, b.port, b.rack, False, leaders.get(b.node_id, 0),
                      held.get(b.node_id, 0), b.node_id == controller_id) for b in brokers]
    live = {b.node_id for b in brokers}
    rows += [BrokerRow(node_id, "-", None, None, True, leaders.get(node_id, 0), count,
                       node_id == controller_id)
             for node_id, count in held.items() if node_id not in live]
    return sorted(rows, key=lambda r: r.node_id)


def gone_brokers(rows: Iterable[BrokerRow]) -> list[str]:
    """A banner line for each broker that holds replicas but is not live."""
    return [f"broker {r.node_id} is not live (fenced or stopped): {r.partitions} "
            f"replicas on it are out of reach" for r in rows if r.fenced]


def topic_row(name: str, internal: bool, rows: Sequence[PartitionRow]) -> TopicRow:
    replication = max((len(r.replicas) for r in rows), default=0)
    sizes = [r.size for r in rows if r.size is not None]
    return TopicRow(name, len(rows), replication, sum(r.under_replicated for r in rows),
                    sum(r.offline for r in rows), internal, sum(sizes) if sizes else None)


def show_size(size: int | None) -> str:
    """Bytes for people: ``512 B``, ``1.5 KiB``, ``20.0 MiB``; unknown: ``?``."""
    if size is None:
        return "?"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def lag_rows(committed: Mapping[TopicPartition, int], log_end: Mapping[TopicPartition, int],
             owners: Mapping[TopicPartition, str]) -> list[LagRow]:
    """Each partition the group has committed or been assigned: LAG is the log end offset
    minus the committed offset (never negative), unknown without both."""
    rows = []
    for tp in sorted(set(committed) | set(owners)):
        current, end = committed.get(tp), log_end.get(tp)
        lag = None if current is None or end is None else max(end - current, 0)
        rows.append(LagRow(tp[0], tp[1], current, end, lag, owners.get(tp, "-")))
    return rows


def total_lag(rows: Iterable[LagRow]) -> int | None:
    """The sum of the known lags; None when none is known."""
    known = [r.lag for r in rows if r.lag is not None]
    return sum(known) if known else None


def show_bytes(data: bytes | None, mode: str) -> str | None:
    """Record bytes for the page: ``text`` (UTF-8, undecodable bytes replaced), ``hex``, or
    ``auto``: text when the bytes are printable UTF-8, else hex. None stays None (null)."""
    if data is None:
        return None
    if mode == "hex":
        return data.hex(" ")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data.hex(" ") if mode == "auto" else data.decode("utf-8", "replace")
    if mode == "auto" and not all(c in _PRINTABLE or c.isprintable() for c in text):
        return data.hex(" ")
    return text


def message_window(log_start: int, log_end: int, page_size: int,
                   from_offset: int | None) -> tuple[int, int]:
    """The [first, last) offsets of one page: from ``from_offset`` (clamped into the log),
    or the last ``page_size`` records when None."""
    if from_offset is None:
        first = max(log_start, log_end - page_size)
    else:
        first = min(max(from_offset, log_start), log_end)
    return first, min(first + page_size, log_end)


def show_time(ms: int) -> str:
    """A record timestamp (ms since the epoch) as UTC ISO 8601; negative: none."""
    if ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds")
