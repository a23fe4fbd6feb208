"""Raftka's admin client (``Admin`` for trio, ``BlockingAdmin``), plus the cluster view,
connection pools and configuration helpers the producer and consumer share."""

from clients.admin.client import Admin, AdminConfig, BlockingAdmin
from clients.admin.cluster import BrokerNode, ClusterMetadata, PartitionInfo, TopicInfo
from clients.admin.operations import (
    ClusterDescription,
    ConfigEntry,
    ListedOffset,
    NewTopic,
    TopicDescription,
)
from clients.admin.settings import ConfigError

__all__ = [
    "Admin",
    "AdminConfig",
    "BlockingAdmin",
    "BrokerNode",
    "ClusterDescription",
    "ClusterMetadata",
    "ConfigEntry",
    "ConfigError",
    "ListedOffset",
    "NewTopic",
    "PartitionInfo",
    "TopicDescription",
    "TopicInfo",
]
