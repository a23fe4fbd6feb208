"""Follower side of replication: one fetcher task per source broker, many partitions each."""

from broker.replica_fetcher.leader_fetcher import LeaderFetcher
from broker.replica_fetcher.manager import ReplicaFetcherManager
from broker.replica_fetcher.settings import FetcherSettings
from broker.replica_fetcher.truncation import divergence_truncation_offset

__all__ = ["FetcherSettings", "LeaderFetcher", "ReplicaFetcherManager",
           "divergence_truncation_offset"]
