"""Kafka-protocol client connections (trio and blocking) and address parsing."""

from clients.net.addresses import parse_bootstrap_servers, parse_host_port
from clients.net.blocking_connection import BlockingKafkaConnection
from clients.net.errors import (
    NO_ANSWER,
    AuthenticationFailedError,
    FatalConnectionError,
    KafkaConnectionError,
    SecurityProtocolMismatchError,
    TlsHandshakeError,
)
from clients.net.security import PLAINTEXT, ClientSecurity
from clients.net.session import FrameBuffer, OutgoingRequest, ProtocolSession
from clients.net.trio_connection import KafkaConnection

__all__ = [
    "AuthenticationFailedError",
    "BlockingKafkaConnection",
    "ClientSecurity",
    "FrameBuffer",
    "KafkaConnection",
    "FatalConnectionError",
    "KafkaConnectionError",
    "SecurityProtocolMismatchError",
    "TlsHandshakeError",
    "NO_ANSWER",
    "OutgoingRequest",
    "PLAINTEXT",
    "ProtocolSession",
    "parse_bootstrap_servers",
    "parse_host_port",
]
