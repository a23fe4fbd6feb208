"""Assigns followed partitions to per-leader fetchers as metadata changes (Kafka's
ReplicaFetcherManager, with one fetcher per source broker)."""

from __future__ import annotations

import logging
from typing import Sequence

import trio

from broker.replica.manager import ReplicaManager, TopicPartition
from broker.replica.partition import Partition
from broker.replica_fetcher.leader_fetcher import LeaderFetcher
from broker.replica.replication_quota import ReplicationQuota
from broker.replica_fetcher.settings import FetcherSettings

logger = logging.getLogger(__name__)


class ReplicaFetcherManager:
    """Listens to the ReplicaManager's follower changes; `run` hosts the fetcher tasks."""

    def __init__(self, broker_id: int, replicas: ReplicaManager,
                 settings: FetcherSettings | None = None,
                 quota: ReplicationQuota | None = None) -> None:
        self.broker_id = broker_id
        self._quota = quota
        self._replicas = replicas
        self._settings = settings or FetcherSettings()
        self._fetchers: dict[int, LeaderFetcher] = {}
        self._owner: dict[TopicPartition, int] = {}
        self._nursery: trio.Nursery | None = None
        replicas.add_follower_listener(self.on_followers_changed)

    @property
    def fetchers(self) -> dict[int, LeaderFetcher]:
        """Source broker id -> its fetcher."""
        return dict(self._fetchers)

    def on_followers_changed(self, followed: Sequence[Partition],
                             stopped: Sequence[TopicPartition]) -> None:
        """The ReplicaManager's follower listener (runs on the trio thread)."""
        for key in stopped:
            self._unassign(key)
        for partition in followed:
            leader = partition.leader_id
            if leader < 0 or leader == self.broker_id:
                self._unassign(partition.key)
                continue
            if self._owner.get(partition.key) not in (None, leader):
                self._unassign(partition.key)
            fetcher = self._fetchers.get(leader)
            if fetcher is None:
                fetcher = self._fetchers[leader] = LeaderFetcher(
                    self.broker_id, leader, self._replicas, self._settings, self._quota)
                if self._nursery is not None:
                    self._nursery.start_soon(fetcher.run)
            fetcher.add(partition)
            self._owner[partition.key] = leader

    def _unassign(self, key: TopicPartition) -> None:
        leader = self._owner.pop(key, None)
        fetcher = self._fetchers.get(leader) if leader is not None else None
        if fetcher is None:
            return
        fetcher.remove(key)
        if not fetcher.partitions:
            fetcher.stop()
            del self._fetchers[leader]  # type: ignore[arg-type]
            logger.info("no partitions left to fetch from broker %s", leader)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the fetchers until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for fetcher in self._fetchers.values():
                nursery.start_soon(fetcher.run)
            task_status.started()
            try:
                await trio.sleep_forever()
            finally:
                self._nursery = None
