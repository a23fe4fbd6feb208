"""The console reads offsets in batches: one ListOffsets call (the admin client then sends
one request per leader) for all the partitions of a page, never one per partition."""

from __future__ import annotations

import uuid
from typing import Any, Iterable, Mapping

from clients.admin import BrokerNode, ClusterDescription, ListedOffset, TopicDescription
from clients.admin.group_operations import GroupDescription, GroupListing
from clients.admin.operations import PartitionInfo
from clients.admin.cluster_operations import LogDirDescription, ReplicaLogDir
from clients.manager.gather import ClusterReader
from clients.protocol import ErrorCode

PARTITIONS = 40


class CountingAdmin:
    """Answers like the admin client for a topic of PARTITIONS partitions and two groups."""

    def __init__(self) -> None:
        self.list_offsets_calls: list[int] = []

    async def describe_topics(self, names: Iterable[str] | None = None
                              ) -> list[TopicDescription]:
        return [TopicDescription("t", uuid.uuid4(), False, [
            PartitionInfo("t", p, 1, 0, (1, 2), (1, 2)) for p in range(PARTITIONS)])]

    async def describe_cluster(self) -> ClusterDescription:
        return ClusterDescription("c", 1, [BrokerNode(1, "h", 1), BrokerNode(2, "h", 2)])

    async def describe_configs(self, topic: str) -> dict[str, Any]:
        return {}

    async def list_offsets(self, timestamps: Mapping[tuple[str, int], int]
                           ) -> dict[tuple[str, int], ListedOffset]:
        self.list_offsets_calls.append(len(timestamps))
        return {tp: ListedOffset(100 if ts == -1 else 0, -1, -1)
                for tp, ts in timestamps.items()}

    async def describe_log_dirs(self, broker_id: int, topics: Iterable[str] | None = None
                                ) -> list[Any]:
        return [LogDirDescription("/d", ErrorCode.NONE, [
            ReplicaLogDir("t", p, 1000 * broker_id + p, 0, False) for p in range(PARTITIONS)])]

    async def list_groups(self) -> list[GroupListing]:
        return [GroupListing("g1", "consumer", "Empty"), GroupListing("g2", "consumer", "Empty")]

    async def describe_groups(self, groups: Iterable[str]) -> dict[str, GroupDescription]:
        return {g: GroupDescription(g, "Empty", "consumer", "", (), 1) for g in groups}

    async def list_group_offsets(self, group: str) -> dict[tuple[str, int], int]:
        return {("t", p): 90 for p in range(PARTITIONS)}

    async def list_groups_offsets(self, groups: Iterable[str]
                                  ) -> dict[str, dict[tuple[str, int], int]]:
        return {g: await self.list_group_offsets(g) for g in groups}


def _reader(admin: CountingAdmin) -> ClusterReader:
    reader = ClusterReader({"bootstrap.servers": "127.0.0.1:9"})
    reader.admin = admin  # type: ignore[assignment]
    return reader


async def test_topic_page_reads_start_and_end_offsets_in_two_batches() -> None:
    admin = CountingAdmin()
    reader = _reader(admin)
    page = await reader.topic(reader.page_reads(), "t")
    assert admin.list_offsets_calls == [PARTITIONS, PARTITIONS]
    assert page.partitions is not None
    assert all((p.log_start, p.log_end) == (0, 100) for p in page.partitions)
    # Sizes are the leader's (broker 1) replica's, from one DescribeLogDirs per broker.
    assert [p.size for p in page.partitions] == [1000 + p for p in range(PARTITIONS)]


async def test_groups_page_reads_every_groups_end_offsets_in_one_batch() -> None:
    admin = CountingAdmin()
    reader = _reader(admin)
    rows = await reader.groups(reader.page_reads())
    assert admin.list_offsets_calls == [PARTITIONS]
    assert rows is not None
    assert [(r.listing.group_id, r.lag) for r in rows] == [("g1", 10 * PARTITIONS),
                                                           ("g2", 10 * PARTITIONS)]
