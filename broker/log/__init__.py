"""Partition log storage in Kafka's on-disk layout (segments, indexes, checkpoints)."""

from broker.log.checkpoints import read_meta_properties, write_meta_properties
from broker.log.config import LogConfig
from broker.log.manager import LogManager
from broker.log.partition_log import PartitionLog
from broker.log.results import AppendResult, FileRange, ReadResult, UpperBound

__all__ = [
    "AppendResult",
    "FileRange",
    "LogConfig",
    "LogManager",
    "PartitionLog",
    "ReadResult",
    "UpperBound",
    "read_meta_properties",
    "write_meta_properties",
]
