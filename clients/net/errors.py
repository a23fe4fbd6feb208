"""Errors raised by Kafka-protocol connections."""

from __future__ import annotations

from clients.protocol import ProtocolError


class KafkaConnectionError(ConnectionError):
    """The connection to a Kafka endpoint was refused, closed, or timed out.

    The connection is unusable afterwards; open a new one to retry.
    """


class TlsHandshakeError(KafkaConnectionError):
    """The TLS handshake failed (an untrusted certificate, a listener that does not speak
    TLS): trying again with the same settings fails again, as Kafka's
    SslAuthenticationException says."""


# A request that got no usable answer: the connection failed (KafkaConnectionError is an
# OSError) or the answer could not be decoded.
NO_ANSWER = (OSError, ProtocolError)
