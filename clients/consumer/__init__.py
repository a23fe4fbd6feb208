"""Raftka's consumer: a trio API (``Consumer``) and a blocking facade
(``BlockingConsumer``), configured with Kafka's names.

Partitions come from ``assign`` or, with ``group.id``, from ``subscribe`` (Kafka's classic
group protocol; eager rebalancing with ``range``/``roundrobin``/``sticky``, incremental
cooperative rebalancing with ``cooperative-sticky``); offsets are
committed with ``commit`` and, by default, automatically. ``isolation.level`` is
read_uncommitted or read_committed.
"""

from clients.common.settings import ConfigError
from clients.consumer.blocking import BlockingConsumer
from clients.consumer.config import ConsumerConfig
from clients.consumer.core import NoOffsetForPartitionError
from clients.consumer.group import CommitFailedError
from clients.consumer.group_metadata import ConsumerGroupMetadata
from clients.consumer.records import ConsumerRecord, ParsedFetch, parse_fetched_records
from clients.consumer.trio_consumer import Consumer, WakeupException

__all__ = [
    "BlockingConsumer",
    "CommitFailedError",
    "ConfigError",
    "ConsumerGroupMetadata",
    "Consumer",
    "ConsumerConfig",
    "ConsumerRecord",
    "NoOffsetForPartitionError",
    "ParsedFetch",
    "WakeupException",
    "parse_fetched_records",
]
