"""Raftka's producer: a trio API (``open_producer``) and a blocking facade
(``BlockingProducer``), configured with Kafka's names.

Idempotent by default (``enable.idempotence``, as Kafka's producer since 3.0); with
``transactional.id`` it is transactional: ``init_transactions``, ``begin_transaction``,
``send_offsets_to_transaction``, ``commit_transaction``, ``abort_transaction``. ``send`` runs Kafka's pipeline: interceptors, serializers, the partitioner
(murmur2 for keys; the uniform sticky partitioner of KIP-480/794 for keyless records), an
accumulator bounded by ``buffer.memory``.
"""

from clients.common.settings import ConfigError
from clients.producer.blocking import BlockingDeliveryFuture, BlockingProducer
from clients.producer.config import ProducerConfig
from clients.producer.core import BufferExhaustedError, ProducerRecord
from clients.producer.future import DeliveryFuture, RecordMetadata
from clients.producer.transactions import (
    ConsumerGroupMetadata,
    TransactionAbortedError,
    TransactionStateError,
)
from clients.producer.trio_producer import (
    Producer,
    ProducerClosedError,
    TrioDeliveryFuture,
    open_producer,
)

__all__ = [
    "BlockingDeliveryFuture",
    "BlockingProducer",
    "BufferExhaustedError",
    "ConfigError",
    "ConsumerGroupMetadata",
    "DeliveryFuture",
    "Producer",
    "ProducerClosedError",
    "ProducerConfig",
    "ProducerRecord",
    "RecordMetadata",
    "TransactionAbortedError",
    "TransactionStateError",
    "TrioDeliveryFuture",
    "open_producer",
]
