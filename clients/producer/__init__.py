"""Raftka's producer: a trio API (``open_producer``) and a blocking facade
(``BlockingProducer``), configured with Kafka's names.

First cut: no idempotence or transactions (``enable.idempotence`` defaults to false and
true is refused), no ``buffer.memory`` bound. Keyed records are partitioned with Kafka's
murmur2; keyless ones stick to a partition per ``batch.size`` bytes.
"""

from clients.admin.settings import ConfigError
from clients.producer.blocking import BlockingDeliveryFuture, BlockingProducer
from clients.producer.config import ProducerConfig
from clients.producer.future import DeliveryFuture, RecordMetadata
from clients.producer.trio_producer import (
    Producer,
    ProducerClosedError,
    TrioDeliveryFuture,
    open_producer,
)

__all__ = [
    "BlockingDeliveryFuture",
    "BlockingProducer",
    "ConfigError",
    "DeliveryFuture",
    "Producer",
    "ProducerClosedError",
    "ProducerConfig",
    "RecordMetadata",
    "TrioDeliveryFuture",
    "open_producer",
]
