"""Reads what the pages show from the cluster through the trio admin client. Each read runs
under its page's deadline (``reach.PageReads``): what did not arrive in time, or could not be
reached, is None and named in the page's banner, and the other panels still render. Offsets
are read in batched ListOffsets calls (one request per partition leader)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Awaitable, Callable, Iterable, Mapping

from clients.admin import Admin, BrokerNode, ClusterDescription, ConfigEntry
from clients.admin.group_operations import GroupDescription, GroupListing, QuorumInfo
from clients.admin.operations import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from clients.manager import views
from clients.manager.broker_probe import probe_brokers
from clients.manager.reach import PageReads, Part, Read, bounded_config
from clients.net.security import CLIENT_SECURITY_KEYS
from clients.protocol import KafkaError

TopicPartition = tuple[str, int]
@dataclass(frozen=True)
class ClusterPage:
    cluster_id: str | None
    controller_id: int | None
    brokers: list[views.BrokerRow] | None
    quorum: QuorumInfo | None
    under_replicated: int | None
    offline: int | None


@dataclass(frozen=True)
class TopicPage:
    name: str
    partitions: list[views.PartitionRow] | None
    configs: list[ConfigEntry] | None
    brokers: list[int] | None  # the live brokers, the reassignment form's choices


@dataclass(frozen=True)
class GroupRow:
    listing: GroupListing
    members: int | None
    lag: int | None
    error: str | None


@dataclass(frozen=True)
class GroupPage:
    group_id: str
    description: GroupDescription | None
    lags: list[views.LagRow] | None
    total_lag: int | None


def known_offsets(offsets: Mapping[str, Any]) -> dict[str, dict[TopicPartition, int]]:
    """The groups whose committed offsets could be read (the others show no lag)."""
    return {g: o for g, o in offsets.items() if not isinstance(o, KafkaError)}


class ClusterReader:
    """One admin client shared by the pages, the samplers and the actions; they run at the
    same time (a connection carries many requests), so a slow page holds up no other."""

    def __init__(self, admin_config: Mapping[str, Any], page_timeout_s: float = 5.0) -> None:
        self.page_timeout_s = page_timeout_s
        self._config = bounded_config(admin_config, page_timeout_s)
        self.admin = Admin(self._config)
        self._brokers: dict[int, BrokerNode] = {}  # the live brokers last seen, by id
        self.probe_brokers: Callable[[Iterable[BrokerNode], float],
                                     Awaitable[dict[int, str]]] = partial(
            probe_brokers, self.admin.config)

    @property
    def bootstrap(self) -> str:
        return str(self._config["bootstrap.servers"])

    def page_reads(self) -> PageReads:
        """A new page's reads, its deadline starting now."""
        return PageReads(self.page_timeout_s, self.bootstrap)

    def client_config(self, **extra: Any) -> dict[str, Any]:
        """A consumer's or producer's config reaching the cluster as the admin client does
        (security.protocol, ssl.*, sasl.* carry over; connecting within the page's time)."""
        security = {k: v for k, v in self._config.items()
                    if k in CLIENT_SECURITY_KEYS or k.startswith("sasl.")
                    or k == "socket.connection.setup.timeout.ms"}
        return {**security, "bootstrap.servers": self._config["bootstrap.servers"],
                "client.id": self._config.get("client.id", "raftka-manager"), **extra}

    async def aclose(self) -> None:
        await self.admin.close()

    async def offsets(self, partitions: Iterable[TopicPartition], when: int
                      ) -> dict[TopicPartition, int]:
        wanted = {tp: when for tp in partitions}
        if not wanted:
            return {}
        found = await self.admin.list_offsets(wanted)
        return {tp: answer.offset for tp, answer in found.items()
                if answer is not None and not isinstance(answer, KafkaError)}

    async def _sizes(self, broker: int, names: list[str] | None
                     ) -> dict[tuple[str, int, int], int]:
        """The bytes of each partition's replica (of ``names``, or all) on ``broker``, from
        one DescribeLogDirs of every topic: asked of that broker alone (naming topics
        would first ask any broker for their partitions)."""
        wanted = None if names is None else set(names)
        sizes: dict[tuple[str, int, int], int] = {}
        for log_dir in await self.admin.describe_log_dirs(broker, None):
            for replica in log_dir.replicas:
                if not replica.is_future and (wanted is None or replica.topic in wanted):
                    sizes[(replica.topic, replica.partition, broker)] = replica.size
        return sizes

    async def _partition_rows(self, reads: PageReads, names: list[str] | None,
                              with_offsets: bool, *also: tuple[Part, Read]
                              ) -> tuple[list[Any] | None, list[views.PartitionRow],
                                         list[BrokerNode] | None, list[Any]]:
        """The topics described, their partitions' rows (with offsets and sizes where they
        could be read), the live brokers, and the results of ``also`` (read alongside).
        Each chain of reads goes on as soon as what it needs has arrived, so a silent part
        holds up only what depends on it."""
        async def topics_then_offsets() -> tuple[Any, dict[Any, int], dict[Any, int]]:
            described = await reads.one(Part("the topics", answers=names is not None),
                                        partial(self.admin.describe_topics, names))
            if described is None or not with_offsets:
                return described, {}, {}
            tps = [(p.topic, p.partition) for t in described for p in t.partitions]
            starts, ends = await reads.each([
                (Part("the log start offsets"), partial(self.offsets, tps,
                                                         EARLIEST_TIMESTAMP)),
                (Part("the log end offsets"), partial(self.offsets, tps, LATEST_TIMESTAMP))])
            return described, starts or {}, ends or {}

        async def brokers_then_sizes() -> tuple[ClusterDescription | None, list[Any]]:
            cluster = await reads.one(Part("the live brokers"), self.admin.describe_cluster)
            if cluster is None:
                return None, []
            self._brokers = {b.node_id: b for b in cluster.brokers}
            return cluster, await reads.each([
                (Part(f"the sizes on broker {b.node_id}", b),
                 partial(self._sizes, b.node_id, names)) for b in cluster.brokers])

        (described, starts, ends), (cluster, per_broker), *extra = await reads.together(
            topics_then_offsets, brokers_then_sizes,
            *(partial(reads.one, part, read) for part, read in also))
        brokers = None if cluster is None else list(cluster.brokers)
        if described is None:
            return None, [], brokers, extra
        sizes: dict[tuple[str, int, int], int] = {}
        for found in per_broker:
            sizes.update(found or {})
        live = None if brokers is None else [b.node_id for b in brokers]
        rows = [views.partition_row(p, live, starts.get((p.topic, p.partition)),
                                    ends.get((p.topic, p.partition)),
                                    sizes.get((p.topic, p.partition, p.leader)))
                for t in described for p in t.partitions]
        return described, rows, brokers, extra

    async def cluster(self, reads: PageReads) -> ClusterPage:
        # Each broker is probed too, so the banner names any that does not answer: those
        # seen before at once, others once DescribeCluster lists them.
        known = dict(self._brokers)

        async def brokers_then_probe_new() -> tuple[ClusterDescription | None,
                                                    dict[int, str]]:
            cluster = await reads.one(Part("the brokers"), self.admin.describe_cluster)
            if cluster is None:
                return None, {}
            self._brokers = {b.node_id: b for b in cluster.brokers}
            return cluster, await self.probe_brokers(
                [b for b in cluster.brokers if known.get(b.node_id) != b], reads.deadline)

        (cluster, late), described, quorum, early = await reads.together(
            brokers_then_probe_new,
            partial(reads.one, Part("the partitions"),
                    partial(self.admin.describe_topics, None)),
            partial(reads.one, Part("the metadata quorum"), self.admin.describe_quorum),
            partial(self.probe_brokers, known.values(), reads.deadline))
        brokers = None if cluster is None else cluster.brokers
        silent = {**early, **late}
        for node_id in sorted(silent):  # a broker no longer live is named below
            if brokers is None or node_id in {b.node_id for b in brokers}:
                reads.note(silent[node_id])
        partitions = (None if described is None
                      else [p for t in described for p in t.partitions])
        live = None if brokers is None else [b.node_id for b in brokers]
        rows = (None if partitions is None
                else [views.partition_row(p, live) for p in partitions])
        # In KRaft a broker's DescribeCluster names any broker as "controller" (clients
        # cannot reach the controllers); the quorum's leader is the active controller.
        controller = (quorum.leader_id if quorum is not None
                      else cluster.controller_id if cluster is not None else None)
        broker_rows = (None if brokers is None
                       else views.broker_rows(brokers, controller, partitions))
        for line in views.gone_brokers(broker_rows or []):
            reads.note(line)
        return ClusterPage(
            cluster.cluster_id if cluster is not None else None, controller, broker_rows,
            quorum,
            None if rows is None else sum(r.under_replicated for r in rows),
            None if rows is None else sum(r.offline for r in rows))

    async def topics(self, reads: PageReads) -> list[views.TopicRow] | None:
        described, rows, _, _ = await self._partition_rows(reads, None, False)
        if described is None:
            return None
        by_topic: dict[str, list[views.PartitionRow]] = {}
        for row in rows:
            by_topic.setdefault(row.topic, []).append(row)
        return sorted((views.topic_row(t.name, t.is_internal, by_topic.get(t.name, []))
                       for t in described), key=lambda r: r.name)

    async def topic(self, reads: PageReads, name: str) -> TopicPage:
        described, rows, brokers, (configs,) = await self._partition_rows(
            reads, [name], True,
            (Part("the topic's configs"), partial(self.admin.describe_configs, name)))
        return TopicPage(name, None if described is None
                         else sorted(rows, key=lambda r: r.partition),
                         None if configs is None
                         else sorted(configs.values(), key=lambda c: c.name),
                         None if brokers is None else sorted(b.node_id for b in brokers))

    async def groups(self, reads: PageReads) -> list[GroupRow] | None:
        listings = await reads.one(Part("the groups"), self.admin.list_groups)
        if listings is None:
            return None
        ids = [g.group_id for g in listings]

        async def offsets_then_ends() -> tuple[dict[str, Any], dict[TopicPartition, int]]:
            found = await reads.one(Part("the groups' offsets"),
                                    partial(self.admin.list_groups_offsets, ids))
            committed = known_offsets(found or {})
            tps = {tp for c in committed.values() for tp in c}
            ends = await reads.one(Part("the log end offsets"),
                                   partial(self.offsets, tps, LATEST_TIMESTAMP))
            return committed, ends or {}

        described, (committed, ends) = await reads.together(
            partial(reads.one, Part("the groups' members"),
                    partial(self.admin.describe_groups, ids)),
            offsets_then_ends)
        rows = []
        for g in listings:
            description = (described or {}).get(g.group_id)
            error = str(description) if isinstance(description, KafkaError) else None
            members = (len(description.members)
                       if isinstance(description, GroupDescription) else None)
            lag = views.total_lag(views.lag_rows(committed.get(g.group_id, {}), ends, {}))
            rows.append(GroupRow(g, members, lag, error))
        return rows

    async def group(self, reads: PageReads, name: str) -> GroupPage:
        async def describe() -> GroupDescription:
            answer = (await self.admin.describe_groups([name]))[name]
            if isinstance(answer, KafkaError):
                raise answer
            return answer

        async def committed_then_ends() -> tuple[dict[TopicPartition, int] | None,
                                                 dict[TopicPartition, int]]:
            committed = await reads.one(Part("the group's offsets"),
                                        partial(self.admin.list_group_offsets, name))
            if not committed:
                return committed, {}
            ends = await reads.one(Part("the log end offsets"),
                                   partial(self.offsets, committed, LATEST_TIMESTAMP))
            return committed, ends or {}

        description, (committed, ends) = await reads.together(
            partial(reads.one, Part("the group", answers=True), describe),
            committed_then_ends)
        if committed is None and description is None:
            return GroupPage(name, None, None, None)
        owners = ({} if description is None
                  else {tp: m.member_id for m in description.members for tp in m.assignment})
        unread = set(owners) - set(ends)
        if unread:  # assigned partitions without commits: their log end too
            ends = {**ends, **(await reads.one(Part("the log end offsets"), partial(
                self.offsets, unread, LATEST_TIMESTAMP)) or {})}
        lags = views.lag_rows(committed or {}, ends, owners)
        return GroupPage(name, description, lags, views.total_lag(lags))

    async def replica_layout(self, topic: str) -> dict[int, tuple[int, ...]]:
        """Each partition's replicas, preferred leader first."""
        described = await self.admin.describe_topics([topic])
        return {p.partition: tuple(p.replicas) for t in described for p in t.partitions}
