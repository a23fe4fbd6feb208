"""Errors raised by Kafka-protocol connections."""

from __future__ import annotations

from clients.protocol import ProtocolError


class KafkaConnectionError(ConnectionError):
    """The connection to a Kafka endpoint was refused, closed, or timed out.

    The connection is unusable afterwards; open a new one to retry.
    """


# A request that got no usable answer: the connection failed (KafkaConnectionError is an
# OSError) or the answer could not be decoded.
NO_ANSWER = (OSError, ProtocolError)
