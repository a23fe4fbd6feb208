"""TLS on a listener's connections: the handshake before any Kafka frame, and the principal
a verified client certificate gives (Kafka's default: "User:" + the subject's RFC 2253 DN)."""

from __future__ import annotations

import logging
import ssl

import trio
from cryptography import x509

logger = logging.getLogger(__name__)

# How long a new connection may take to complete its TLS handshake.
HANDSHAKE_TIMEOUT_S = 10.0


class HandshakeFailed(Exception):
    """The peer did not complete a TLS handshake (plaintext, garbage, a refused or missing
    certificate, or silence); the connection is closed."""


async def accept_tls(stream: trio.SocketStream, context: ssl.SSLContext,
                     timeout_s: float = HANDSHAKE_TIMEOUT_S) -> trio.SSLStream:
    """Wrap an accepted connection in TLS and complete the handshake within `timeout_s`."""
    tls = trio.SSLStream(stream, context, server_side=True)
    try:
        with trio.fail_after(timeout_s):
            await tls.do_handshake()
    except trio.TooSlowError:
        raise HandshakeFailed(f"no TLS handshake within {timeout_s:g} s") from None
    except trio.BrokenResourceError as exc:
        cause = exc.__cause__
        reason = (getattr(cause, "reason", None) or str(cause)) if cause else "connection lost"
        raise HandshakeFailed(f"TLS handshake failed: {reason}") from None
    return tls


def peer_principal(tls: trio.SSLStream) -> str | None:
    """"User:<subject DN>" of the client certificate the handshake verified, else None."""
    if tls.context.verify_mode == ssl.CERT_NONE:
        return None
    der = tls.getpeercert(binary_form=True)
    if not der:
        return None
    return "User:" + subject_dn(der)


def subject_dn(der: bytes) -> str:
    """The certificate subject in RFC 2253 form (most specific RDN first, e.g.
    "CN=alice,OU=eng,O=example"), as Java's X500Principal.getName() writes it."""
    return x509.load_der_x509_certificate(der).subject.rfc4514_string()
