"""Raftka's consumer: a trio API (``Consumer``) and a blocking facade
(``BlockingConsumer``), configured with Kafka's names.

First cut: manual assignment only (``assign``/``seek``); ``subscribe`` raises
NotImplementedError until the group coordinator exists, and ``group.id`` is accepted but
no offsets are committed. read_uncommitted only.
"""

from clients.admin.settings import ConfigError
from clients.consumer.blocking import BlockingConsumer
from clients.consumer.config import ConsumerConfig
from clients.consumer.core import NoOffsetForPartitionError
from clients.consumer.records import ConsumerRecord, ParsedFetch, parse_fetched_records
from clients.consumer.trio_consumer import Consumer

__all__ = [
    "BlockingConsumer",
    "ConfigError",
    "Consumer",
    "ConsumerConfig",
    "ConsumerRecord",
    "NoOffsetForPartitionError",
    "ParsedFetch",
    "parse_fetched_records",
]
