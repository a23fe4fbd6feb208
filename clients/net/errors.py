"""Errors raised by Kafka-protocol connections."""

from __future__ import annotations


class KafkaConnectionError(ConnectionError):
    """The connection to a Kafka endpoint was refused, closed, or timed out.

    The connection is unusable afterwards; open a new one to retry.
    """
