"""Telling a security protocol mismatch from a broker going away (pure, no I/O).

What a listener does with a client that speaks another protocol:

- a TLS listener closes a plaintext connection at its first bytes, answering nothing;
- a plaintext listener reads a TLS ClientHello as an oversized frame and closes;
- a SASL listener answers the first request other than ApiVersions or SaslHandshake with
  ILLEGAL_SASL_STATE (a Metadata answer then lists no broker) and closes;
- a listener without SASL refuses SaslHandshake with ILLEGAL_SASL_STATE.

The first three look like a broker that went away, so a connection that meets one asks a
short-lived second connection what the listener speaks (see ``probes``) before it names
the mismatch; these functions decide when to ask and word the answer.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from clients.net.errors import SecurityProtocolMismatchError
from clients.protocol import ApiKey, ErrorCode

# A TLS record starts with its content type (alert 0x15, handshake 0x16) and the major
# version 3; as a Kafka size prefix that would announce a frame of over 350 MB.
_TLS_RECORD_TYPES = frozenset({0x15, 0x16})
_TLS_MAJOR_VERSION = 0x03
PREFIX = "security protocol mismatch"


def looks_like_tls(received: bytes | bytearray) -> bool:
    """Whether the first bytes a peer sent are a TLS record rather than a Kafka frame."""
    return (len(received) >= 2 and received[0] in _TLS_RECORD_TYPES
            and received[1] == _TLS_MAJOR_VERSION)


def refused_before_authentication(api_key: int, body: Mapping[str, Any]) -> bool:
    """Whether ``body`` looks like a SASL listener's answer to a request sent before
    authenticating: ILLEGAL_SASL_STATE, or a Metadata answer naming no broker and no
    cluster (every running broker names both)."""
    if body.get("error_code") == ErrorCode.ILLEGAL_SASL_STATE:
        return True
    if api_key != ApiKey.METADATA:
        return False
    topics = body.get("topics") or ()
    if topics and all(t.get("error_code") == ErrorCode.ILLEGAL_SASL_STATE for t in topics):
        return True
    return not body.get("brokers") and not body.get("cluster_id")


def _peer(host: str, port: int) -> str:
    return f"{host}:{port}"


def tls_client_on_plaintext_listener(host: str, port: int, protocol: str
                                     ) -> SecurityProtocolMismatchError:
    hint = "SASL_PLAINTEXT" if protocol == "SASL_SSL" else "PLAINTEXT or SASL_PLAINTEXT"
    return SecurityProtocolMismatchError(
        f"{PREFIX}: {_peer(host, port)} answers without TLS (a PLAINTEXT or SASL_PLAINTEXT "
        f"listener) but security.protocol is {protocol}; use {hint}")


def plaintext_client_on_tls_listener(host: str, port: int, protocol: str
                                     ) -> SecurityProtocolMismatchError:
    hint = "SASL_SSL" if protocol == "SASL_PLAINTEXT" else "SSL or SASL_SSL"
    return SecurityProtocolMismatchError(
        f"{PREFIX}: {_peer(host, port)} speaks TLS (an SSL or SASL_SSL listener) but "
        f"security.protocol is {protocol}; use {hint}")


def client_without_sasl_on_sasl_listener(host: str, port: int, protocol: str,
                                         mechanisms: Sequence[str]
                                         ) -> SecurityProtocolMismatchError:
    hint = "SASL_SSL" if protocol == "SSL" else "SASL_PLAINTEXT"
    offered = ", ".join(mechanisms) or "none"
    return SecurityProtocolMismatchError(
        f"{PREFIX}: {_peer(host, port)} is a SASL listener (mechanisms: {offered}) but "
        f"security.protocol is {protocol}, which sends no credentials; use {hint} with "
        f"sasl.mechanism and a user")


def sasl_client_on_listener_without_sasl(host: str, port: int, protocol: str
                                         ) -> SecurityProtocolMismatchError:
    hint = "SSL" if protocol == "SASL_SSL" else "PLAINTEXT"
    return SecurityProtocolMismatchError(
        f"{PREFIX}: {_peer(host, port)} refused SaslHandshake, so it is not a SASL "
        f"listener, but security.protocol is {protocol}; use {hint}")
