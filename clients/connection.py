"""One connection to one Kafka-protocol endpoint: trio and blocking flavours.

``KafkaConnection`` (trio) and ``BlockingKafkaConnection`` share their framing, version
negotiation and response parsing (``clients.net.session``) and their state (``clients.net.base``);
they differ only in I/O.
"""

from clients.net import (
    BlockingKafkaConnection,
    KafkaConnection,
    KafkaConnectionError,
    parse_bootstrap_servers,
    parse_host_port,
)

__all__ = [
    "BlockingKafkaConnection",
    "KafkaConnection",
    "KafkaConnectionError",
    "parse_bootstrap_servers",
    "parse_host_port",
]
