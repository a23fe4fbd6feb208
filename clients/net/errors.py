"""Errors raised by Kafka-protocol connections."""

from __future__ import annotations

from clients.protocol import ErrorCode, KafkaError, ProtocolError


class KafkaConnectionError(ConnectionError):
    """The connection to a Kafka endpoint was refused, closed, or timed out.

    The connection is unusable afterwards; open a new one to retry.
    """


class FatalConnectionError(KafkaConnectionError):
    """Connecting failed in a way that trying again with the same settings cannot fix: the
    broker refused the credentials, the TLS handshake failed, or the client and the
    listener use different security protocols. As Kafka's clients treat an
    AuthenticationException, Raftka's clients do not retry it: the call in progress and
    every later one raise it."""


class AuthenticationFailedError(FatalConnectionError, KafkaError):
    """The broker refused the SASL credentials or mechanism. ``code`` is Kafka's error
    code (SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM, ...) and the message
    carries the broker's own."""

    def __init__(self, code: ErrorCode | int, message: str) -> None:
        KafkaError.__init__(self, code, message)

    def __str__(self) -> str:
        return self.message


class TlsHandshakeError(FatalConnectionError):
    """The TLS handshake failed (an untrusted certificate, a refused client certificate):
    trying again with the same settings fails again, as Kafka's
    SslAuthenticationException says."""


class TlsHandshakeClosedError(KafkaConnectionError):
    """The peer closed the connection during the TLS handshake without a TLS answer: a
    plaintext listener does that (see ``mismatch``), and so does a broker going away, so
    it is retried unless a probe shows the listener answers without TLS."""


class SecurityProtocolMismatchError(FatalConnectionError):
    """The listener speaks another security protocol than the client's
    ``security.protocol`` (TLS against plaintext, SASL expected or not); the message
    names the likely mismatch."""


# A request that got no usable answer: the connection failed (KafkaConnectionError is an
# OSError) or the answer could not be decoded.
NO_ANSWER = (OSError, ProtocolError)
