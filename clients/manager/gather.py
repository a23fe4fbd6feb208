"""Reads what the pages show from the cluster through the trio admin and consumer clients.
Offsets are read in batched ListOffsets calls (one request per partition leader)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, AsyncIterator, Iterable, Mapping

import trio

from clients.admin import Admin, ConfigEntry
from clients.admin.group_operations import GroupDescription, GroupListing, QuorumInfo
from clients.admin.operations import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from clients.consumer import Consumer, ConsumerRecord
from clients.manager import views
from clients.net.security import CLIENT_SECURITY_KEYS
from clients.net import KafkaConnectionError
from clients.protocol import KafkaError

TopicPartition = tuple[str, int]
POLL_SLICE_MS = 200


@dataclass(frozen=True)
class ClusterPage:
    cluster_id: str
    controller_id: int
    brokers: list[views.BrokerRow]
    quorum: QuorumInfo | None
    quorum_error: str | None
    under_replicated: int
    offline: int


@dataclass(frozen=True)
class TopicPage:
    name: str
    partitions: list[views.PartitionRow]
    configs: list[ConfigEntry]
    brokers: list[int]  # the live brokers, the reassignment form's choices


@dataclass(frozen=True)
class GroupRow:
    listing: GroupListing
    members: int | None
    lag: int | None
    error: str | None


@dataclass(frozen=True)
class GroupPage:
    description: GroupDescription
    lags: list[views.LagRow]
    total_lag: int | None


@dataclass(frozen=True)
class MessagesPage:
    topic: str
    partition: int
    log_start: int
    log_end: int
    first: int
    last: int
    records: list[ConsumerRecord]


def _known(offsets: Mapping[str, Any]) -> dict[str, dict[TopicPartition, int]]:
    """The groups whose committed offsets could be read (the others show no lag)."""
    return {g: o for g, o in offsets.items() if not isinstance(o, KafkaError)}


class ClusterReader:
    """One admin client shared by the pages; calls take turns (the client's connections
    carry one request at a time)."""

    def __init__(self, admin_config: Mapping[str, Any]) -> None:
        self._config = dict(admin_config)
        self._admin = Admin(self._config)
        self._lock = trio.Lock()

    def client_config(self, **extra: Any) -> dict[str, Any]:
        """A consumer's or producer's config reaching the cluster as the admin client does
        (security.protocol, ssl.*, sasl.* carry over)."""
        security = {k: v for k, v in self._config.items()
                    if k in CLIENT_SECURITY_KEYS or k.startswith("sasl.")}
        return {**security, "bootstrap.servers": self._config["bootstrap.servers"],
                "client.id": self._config.get("client.id", "raftka-manager"), **extra}

    async def aclose(self) -> None:
        await self._admin.close()

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[Admin]:
        """The admin client, for one caller at a time (the console's actions)."""
        async with self._lock:
            yield self._admin

    async def _offsets(self, partitions: Iterable[TopicPartition], when: int
                       ) -> dict[TopicPartition, int]:
        wanted = {tp: when for tp in partitions}
        if not wanted:
            return {}
        found = await self._admin.list_offsets(wanted)
        return {tp: answer.offset for tp, answer in found.items()
                if answer is not None and not isinstance(answer, KafkaError)}

    async def _replica_sizes(self, live: list[int], names: list[str] | None
                             ) -> dict[tuple[str, int, int], int]:
        """The bytes of each partition's replica on each live broker (DescribeLogDirs, one
        request per broker; a broker that cannot answer is left out)."""
        sizes: dict[tuple[str, int, int], int] = {}
        for broker in live:
            try:
                dirs = await self._admin.describe_log_dirs(broker, names)
            except (KafkaError, KafkaConnectionError):
                continue
            for log_dir in dirs:
                for replica in log_dir.replicas:
                    if not replica.is_future:
                        sizes[(replica.topic, replica.partition, broker)] = replica.size
        return sizes

    async def _partition_rows(self, names: list[str] | None, with_offsets: bool
                              ) -> tuple[list[Any], list[views.PartitionRow]]:
        described = await self._admin.describe_topics(names)
        cluster = await self._admin.describe_cluster()
        live = [b.node_id for b in cluster.brokers]
        infos = [p for t in described for p in t.partitions]
        starts: dict[TopicPartition, int] = {}
        ends: dict[TopicPartition, int] = {}
        if with_offsets:
            tps = [(p.topic, p.partition) for p in infos]
            starts = await self._offsets(tps, EARLIEST_TIMESTAMP)
            ends = await self._offsets(tps, LATEST_TIMESTAMP)
        sizes = await self._replica_sizes(live, names)
        rows = [views.partition_row(p, live, starts.get((p.topic, p.partition)),
                                    ends.get((p.topic, p.partition)),
                                    sizes.get((p.topic, p.partition, p.leader)))
                for p in infos]
        return described, rows

    async def cluster(self) -> ClusterPage:
        async with self._lock:
            cluster = await self._admin.describe_cluster()
            described = await self._admin.describe_topics(None)
            partitions = [p for t in described for p in t.partitions]
            live = [b.node_id for b in cluster.brokers]
            rows = [views.partition_row(p, live) for p in partitions]
            quorum, quorum_error = None, None
            try:
                quorum = await self._admin.describe_quorum()
            except KafkaError as exc:
                quorum_error = str(exc)
        # In KRaft a broker's DescribeCluster names any broker as "controller" (clients
        # cannot reach the controllers); the quorum's leader is the active controller.
        controller = quorum.leader_id if quorum is not None else cluster.controller_id
        return ClusterPage(cluster.cluster_id, controller,
                           views.broker_rows(cluster.brokers, controller, partitions),
                           quorum, quorum_error, sum(r.under_replicated for r in rows),
                           sum(r.offline for r in rows))

    async def topics(self) -> list[views.TopicRow]:
        async with self._lock:
            described, rows = await self._partition_rows(None, with_offsets=False)
        by_topic: dict[str, list[views.PartitionRow]] = {}
        for row in rows:
            by_topic.setdefault(row.topic, []).append(row)
        return sorted((views.topic_row(t.name, t.is_internal, by_topic.get(t.name, []))
                       for t in described), key=lambda r: r.name)

    async def topic(self, name: str) -> TopicPage:
        async with self._lock:
            _, rows = await self._partition_rows([name], with_offsets=True)
            configs = await self._admin.describe_configs(name)
            cluster = await self._admin.describe_cluster()
        return TopicPage(name, sorted(rows, key=lambda r: r.partition),
                         sorted(configs.values(), key=lambda c: c.name),
                         sorted(b.node_id for b in cluster.brokers))

    async def groups(self) -> list[GroupRow]:
        async with self._lock:
            listings = await self._admin.list_groups()
            described = await self._admin.describe_groups([g.group_id for g in listings])
            committed = _known(await self._admin.list_groups_offsets(
                [g.group_id for g in listings]))
            ends = await self._offsets({tp for c in committed.values() for tp in c},
                                       LATEST_TIMESTAMP)
        rows = []
        for g in listings:
            description = described.get(g.group_id)
            error = str(description) if isinstance(description, KafkaError) else None
            members = (len(description.members)
                       if isinstance(description, GroupDescription) else None)
            lag = views.total_lag(views.lag_rows(committed.get(g.group_id, {}), ends, {}))
            rows.append(GroupRow(g, members, lag, error))
        return rows

    async def group(self, name: str) -> GroupPage:
        async with self._lock:
            answer = (await self._admin.describe_groups([name]))[name]
            if isinstance(answer, KafkaError):
                raise answer
            committed = await self._admin.list_group_offsets(name)
            owners = {tp: m.member_id for m in answer.members for tp in m.assignment}
            ends = await self._offsets(set(committed) | set(owners), LATEST_TIMESTAMP)
        lags = views.lag_rows(committed, ends, owners)
        return GroupPage(answer, lags, views.total_lag(lags))

    async def replica_layout(self, topic: str) -> dict[int, tuple[int, ...]]:
        """Each partition's replicas, preferred leader first."""
        async with self._lock:
            described = await self._admin.describe_topics([topic])
        return {p.partition: tuple(p.replicas) for t in described for p in t.partitions}

    async def traffic_offsets(self) -> tuple[dict[TopicPartition, int],
                                             dict[TopicPartition, int],
                                             dict[str, dict[TopicPartition, int]]]:
        """Each partition's leader and log end offset, and each group's committed offsets
        (one ListOffsets batch; one OffsetFetch per coordinator)."""
        async with self._lock:
            described = await self._admin.describe_topics(None)
            leaders = {(p.topic, p.partition): p.leader
                       for t in described for p in t.partitions if p.leader >= 0}
            ends = await self._offsets(leaders, LATEST_TIMESTAMP)
            listings = await self._admin.list_groups()
            committed = _known(await self._admin.list_groups_offsets(
                [g.group_id for g in listings]))
        return leaders, ends, committed

    async def messages(self, topic: str, partition: int, page_size: int,
                       from_offset: int | None, from_timestamp: int | None,
                       timeout_s: float) -> MessagesPage:
        """One page of a partition's records: from an offset, from the first record at or
        after a timestamp (ms), or the last ``page_size``."""
        tp = (topic, partition)
        async with self._lock:
            found = await self._admin.list_offsets({tp: EARLIEST_TIMESTAMP})
            if isinstance(found[tp], KafkaError):
                raise found[tp]
            log_start = found[tp].offset
            log_end = (await self._offsets([tp], LATEST_TIMESTAMP)).get(tp, log_start)
            if from_timestamp is not None:
                at = (await self._admin.list_offsets({tp: from_timestamp}))[tp]
                from_offset = log_end if at is None or isinstance(at, KafkaError) else at.offset
        first, last = views.message_window(log_start, log_end, page_size, from_offset)
        records = await self._read(tp, first, last, timeout_s)
        return MessagesPage(topic, partition, log_start, log_end, first, last, records)

    async def _read(self, tp: TopicPartition, first: int, last: int, timeout_s: float
                    ) -> list[ConsumerRecord]:
        """Records with offsets in [first, last), as many as arrive within ``timeout_s``."""
        records: list[ConsumerRecord] = []
        if first >= last:
            return records
        async with Consumer(self.client_config(**{"enable.auto.commit": False})) as consumer:
            consumer.assign([tp])
            consumer.seek(tp, first)
            with trio.move_on_after(timeout_s):
                while not records or records[-1].offset < last - 1:
                    batch = await consumer.poll(POLL_SLICE_MS, max_records=last - first)
                    records += [r for r in batch if first <= r.offset < last]
        return records
