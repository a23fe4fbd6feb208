"""Raftka's admin client (``Admin`` for trio, ``BlockingAdmin``), with the cluster view and
the configuration error of `clients.common`, which the producer and consumer share."""

from clients.admin.client import Admin, AdminConfig, BlockingAdmin
from clients.common.cluster import BrokerNode, ClusterMetadata, PartitionInfo, TopicInfo
from clients.admin.operations import (
    ClusterDescription,
    ConfigEntry,
    ListedOffset,
    NewTopic,
    TopicDescription,
)
from clients.common.settings import ConfigError

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
