"""How a client reaches a broker: `security.protocol` and the TLS context, and the one place
that opens a connection's transport (TCP, then the TLS handshake when asked for)."""

from __future__ import annotations

import socket
import ssl
from dataclasses import dataclass, field
from typing import Any, Mapping

import trio

from clients.net.errors import KafkaConnectionError, TlsHandshakeClosedError, TlsHandshakeError
from clients.net.socket_buffers import OS_DEFAULT, apply_buffer_sizes
from clients.net.tls import SSL_DEFAULTS, TlsConfigError, TlsSettings
from clients.net.tls_context import build_context

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# The protocols the client connection layer can speak.
CLIENT_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
CLIENT_SECURITY_KEYS = ("security.protocol", *SSL_DEFAULTS)


@dataclass(frozen=True)
class ClientSecurity:
    """A client's `security.protocol` with its TLS context (None unless the protocol uses
    TLS). Built once per client, shared by all its connections."""

    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = field(default=None, compare=False)

    @property
    def uses_tls(self) -> bool:
        return self.protocol in TLS_PROTOCOLS

    @classmethod
    def from_tls_settings(cls, protocol: str, settings: TlsSettings | None) -> ClientSecurity:
        """`protocol` with a client context from `settings` (TlsConfigError naming the key
        of a bad setting or file)."""
        protocol = protocol.upper()
        if protocol not in TLS_PROTOCOLS:
            return cls(protocol)
        return cls(protocol, build_context(settings or TlsSettings(), server_side=False))

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ClientSecurity:
        """From a client's Kafka-named configuration (`security.protocol`, `ssl.*`)."""
        protocol = str(config.get("security.protocol") or "PLAINTEXT").strip().upper()
        if protocol not in CLIENT_SECURITY_PROTOCOLS:
            raise TlsConfigError("security.protocol", f"{protocol!r} is not one of "
                                 f"{', '.join(CLIENT_SECURITY_PROTOCOLS)}")
        if protocol not in TLS_PROTOCOLS:
            return cls(protocol)
        return cls.from_tls_settings(protocol, TlsSettings.from_mapping(config))


PLAINTEXT = ClientSecurity()


async def open_transport(host: str, port: int, security: ClientSecurity,
                         local_address: str | None = None,
                         send_buffer_bytes: int = OS_DEFAULT,
                         receive_buffer_bytes: int = OS_DEFAULT,
                         ) -> tuple[trio.abc.Stream, trio.socket.SocketType]:
    """A connected stream to `host:port` (TLS-wrapped and handshaken when `security` asks)
    and its socket (for closing without a checkpoint), from `local_address` when given, with
    the socket buffer sizes given (-1: the OS default). The caller bounds the time."""
    try:
        tcp = await trio.open_tcp_stream(host, port, local_address=local_address)
    except OSError as exc:
        raise KafkaConnectionError(f"cannot connect to {host}:{port}: {exc}") from None
    raw_socket = tcp.socket
    try:
        apply_buffer_sizes(raw_socket, send_buffer_bytes, receive_buffer_bytes)
    except OSError as exc:
        await trio.aclose_forcefully(tcp)
        raise KafkaConnectionError(f"cannot size the socket to {host}:{port}: {exc}") from None
    if not security.uses_tls:
        return tcp, raw_socket
    assert security.ssl_context is not None
    stream = trio.SSLStream(tcp, security.ssl_context, server_hostname=host)
    try:
        await stream.do_handshake()
    except (trio.BrokenResourceError, ssl.SSLError) as exc:
        await trio.aclose_forcefully(tcp)
        raise _handshake_error(host, port, exc) from None
    except BaseException:
        await trio.aclose_forcefully(tcp)
        raise
    return stream, raw_socket


def open_blocking_socket(host: str, port: int, security: ClientSecurity,
                         timeout: float) -> socket.socket:
    """The blocking counterpart of `open_transport`: a connected (TLS) socket."""
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:
        raise KafkaConnectionError(f"cannot connect to {host}:{port}: {exc}") from None
    if not security.uses_tls:
        return sock
    assert security.ssl_context is not None
    try:
        return security.ssl_context.wrap_socket(sock, server_hostname=host)
    except TimeoutError:
        sock.close()
        raise KafkaConnectionError(f"TLS handshake with {host}:{port} timed out after "
                                   f"{timeout:g} s") from None
    except (OSError, ssl.SSLError) as exc:
        sock.close()
        raise _handshake_error(host, port, exc) from None


# How a peer that does not speak TLS ends a handshake: it closes or resets the connection.
_CLOSED = (ssl.SSLEOFError, ssl.SSLZeroReturnError, ConnectionResetError, BrokenPipeError,
           ConnectionAbortedError)


def _handshake_error(host: str, port: int, exc: BaseException) -> KafkaConnectionError:
    """TlsHandshakeClosedError when the peer closed the connection without a TLS answer,
    else TlsHandshakeError with the TLS reason (an untrusted certificate, an alert)."""
    cause = exc.__cause__ if isinstance(exc, trio.BrokenResourceError) else exc
    if cause is None or isinstance(cause, _CLOSED):
        return TlsHandshakeClosedError(
            f"TLS handshake with {host}:{port} failed: the peer closed the connection")
    return TlsHandshakeError(f"TLS handshake with {host}:{port} failed: {_tls_reason(cause)}")


def _tls_reason(cause: BaseException) -> str:
    if isinstance(cause, ssl.SSLCertVerificationError):
        return cause.verify_message or str(cause)
    if isinstance(cause, ssl.SSLError):
        return cause.reason or str(cause)
    return str(cause) or type(cause).__name__
