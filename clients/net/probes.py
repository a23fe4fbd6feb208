"""Asking a listener what it speaks, on a short-lived second connection, after a
connection ended the way a security protocol mismatch ends one (see ``mismatch``).

Each ``explain_*`` returns the SecurityProtocolMismatchError to raise, or None when the
probe finds no mismatch (the broker may just have gone away): the caller then raises its
own error. A probe is a bare exchange (ApiVersions, then SaslHandshake when asked) that
never probes in turn. Trio and blocking versions of each.
"""

from __future__ import annotations

import socket
import ssl
import time
from functools import lru_cache
from typing import Any

import trio

from clients.net import mismatch
from clients.net.errors import (
    KafkaConnectionError,
    SecurityProtocolMismatchError,
    TlsHandshakeError,
)
from clients.net.security import ClientSecurity, open_blocking_socket, open_transport
from clients.net.session import FrameBuffer, OutgoingRequest, ProtocolSession
from clients.protocol import ApiKey, ErrorCode, KafkaError, ProtocolError

# A probe is one short exchange; it must not stretch a failure by a whole connect timeout.
PROBE_TIMEOUT_S = 5.0
PROBE_CLIENT_ID = "raftka-probe"
# Any mechanism will do: a SASL listener answers SaslHandshake with its mechanisms.
_HANDSHAKE = {"mechanism": "PLAIN"}
_HANDSHAKE_VERSION = 1
# A probe reads only small answers; a bigger size prefix is no answer to it.
_MAX_ANSWER = 1 << 20
# How a probe's exchange fails when the peer is no Kafka listener of that kind, or gone.
_NO_ANSWER = (OSError, EOFError, ProtocolError, trio.BrokenResourceError,
              trio.ClosedResourceError, trio.TooSlowError)


@lru_cache(maxsize=1)
def _any_tls() -> ClientSecurity:
    """TLS without verification: the probe only asks whether the peer speaks TLS at all,
    and sends nothing over it."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return ClientSecurity("SSL", context)


def _timeout(timeout: float) -> float:
    return min(timeout, PROBE_TIMEOUT_S)


def _sasl_mechanisms(body: dict[str, Any]) -> list[str] | None:
    """A SASL listener's mechanisms from its SaslHandshake answer; None when the listener
    refused the handshake (it has no SASL)."""
    if body.get("error_code") in (ErrorCode.NONE, ErrorCode.UNSUPPORTED_SASL_MECHANISM):
        return [str(m) for m in body.get("mechanisms") or ()]
    return None


def _refusal(host: str, port: int, security: ClientSecurity,
             body: dict[str, Any] | None) -> SecurityProtocolMismatchError | None:
    mechanisms = None if body is None else _sasl_mechanisms(body)
    if mechanisms is None:
        return None
    return mismatch.client_without_sasl_on_sasl_listener(host, port, security.protocol,
                                                         mechanisms)


def _next_request(session: ProtocolSession, previous: OutgoingRequest | None,
                  frame: bytes | None, ask_sasl: bool) -> OutgoingRequest | None:
    """The probe's exchange, one step: ApiVersions, then SaslHandshake when ``ask_sasl``;
    None once done. Raises KafkaError for an ApiVersions error (still a Kafka answer)."""
    if previous is None:
        return session.api_versions_request()
    if previous.api_key == ApiKey.API_VERSIONS:
        assert frame is not None
        session.apply_api_versions(previous, frame)
        if ask_sasl:
            return session.build_request(ApiKey.SASL_HANDSHAKE, _HANDSHAKE, _HANDSHAKE_VERSION)
    return None


# ---- trio ----

async def _receive_frame(stream: trio.abc.Stream) -> bytes:
    frames = FrameBuffer()
    while (frame := frames.next_frame()) is None:
        wanted = frames.bytes_wanted()
        if len(frames.peek(4)) == 4 and wanted > _MAX_ANSWER:
            raise ProtocolError("not an answer to the probe")
        data = await stream.receive_some(max(wanted, 1 << 12))
        if not data:
            raise EOFError("closed")
        frames.feed(data)
    return frame


async def _exchange(host: str, port: int, security: ClientSecurity, timeout: float,
                    ask_sasl: bool) -> dict[str, Any]:
    """The last answer of the probe's exchange (ApiVersions', or SaslHandshake's)."""
    session = ProtocolSession(PROBE_CLIENT_ID)
    with trio.fail_after(_timeout(timeout)):
        stream, _ = await open_transport(host, port, security)
        try:
            request, frame, body = None, None, {}
            while (request := _next_request(session, request, frame, ask_sasl)) is not None:
                await stream.send_all(request.data)
                frame = await _receive_frame(stream)
                if request.api_key == ApiKey.SASL_HANDSHAKE:
                    body = session.parse_response(request, frame)
            return body
        finally:
            await trio.aclose_forcefully(stream)


async def explain_handshake_closed(host: str, port: int, security: ClientSecurity,
                                   timeout: float) -> SecurityProtocolMismatchError | None:
    """A TLS handshake the peer closed: a mismatch when the listener answers ApiVersions
    in plaintext."""
    try:
        await _exchange(host, port, ClientSecurity(), timeout, ask_sasl=False)
    except KafkaError:
        pass  # an ApiVersions error is still an answer, in plaintext
    except _NO_ANSWER:
        return None
    return mismatch.tls_client_on_plaintext_listener(host, port, security.protocol)


async def explain_closed(host: str, port: int, security: ClientSecurity, received: bytes,
                         timeout: float) -> SecurityProtocolMismatchError | None:
    """A plaintext connection the peer closed before answering ApiVersions: a mismatch
    when what it sent, or a TLS handshake on a second connection, shows it speaks TLS."""
    if not mismatch.looks_like_tls(received):
        try:
            with trio.fail_after(_timeout(timeout)):
                stream, _ = await open_transport(host, port, _any_tls())
        except TlsHandshakeError:
            pass  # a TLS answer (an alert)
        except (KafkaConnectionError, trio.TooSlowError):
            return None
        else:
            await trio.aclose_forcefully(stream)
    return mismatch.plaintext_client_on_tls_listener(host, port, security.protocol)


async def explain_refusal(host: str, port: int, security: ClientSecurity,
                          timeout: float) -> SecurityProtocolMismatchError | None:
    """An answer that looks like a SASL listener's refusal of a client that did not
    authenticate: a mismatch when the listener answers SaslHandshake with mechanisms."""
    try:
        body = await _exchange(host, port, security, timeout, ask_sasl=True)
    except (*_NO_ANSWER, KafkaError):
        return None
    return _refusal(host, port, security, body)


# ---- blocking ----

def _receive_frame_blocking(sock: socket.socket, deadline: float) -> bytes:
    frames = FrameBuffer()
    while (frame := frames.next_frame()) is None:
        wanted = frames.bytes_wanted()
        if len(frames.peek(4)) == 4 and wanted > _MAX_ANSWER:
            raise ProtocolError("not an answer to the probe")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no answer to the probe in time")
        sock.settimeout(remaining)
        data = sock.recv(max(wanted, 1 << 12))
        if not data:
            raise EOFError("closed")
        frames.feed(data)
    return frame


def _exchange_blocking(host: str, port: int, security: ClientSecurity, timeout: float,
                       ask_sasl: bool) -> dict[str, Any]:
    """``_exchange`` over a blocking socket."""
    session = ProtocolSession(PROBE_CLIENT_ID)
    deadline = time.monotonic() + _timeout(timeout)
    with open_blocking_socket(host, port, security, _timeout(timeout)) as sock:
        request, frame, body = None, None, {}
        while (request := _next_request(session, request, frame, ask_sasl)) is not None:
            sock.sendall(request.data)
            frame = _receive_frame_blocking(sock, deadline)
            if request.api_key == ApiKey.SASL_HANDSHAKE:
                body = session.parse_response(request, frame)
        return body


def explain_handshake_closed_blocking(host: str, port: int, security: ClientSecurity,
                                      timeout: float) -> SecurityProtocolMismatchError | None:
    """``explain_handshake_closed`` over a blocking socket."""
    try:
        _exchange_blocking(host, port, ClientSecurity(), timeout, ask_sasl=False)
    except KafkaError:
        pass
    except _NO_ANSWER:
        return None
    return mismatch.tls_client_on_plaintext_listener(host, port, security.protocol)


def explain_closed_blocking(host: str, port: int, security: ClientSecurity,
                            received: bytes, timeout: float
                            ) -> SecurityProtocolMismatchError | None:
    """``explain_closed`` over a blocking socket."""
    if not mismatch.looks_like_tls(received):
        try:
            open_blocking_socket(host, port, _any_tls(), _timeout(timeout)).close()
        except TlsHandshakeError:
            pass
        except KafkaConnectionError:
            return None
    return mismatch.plaintext_client_on_tls_listener(host, port, security.protocol)


def explain_refusal_blocking(host: str, port: int, security: ClientSecurity,
                             timeout: float) -> SecurityProtocolMismatchError | None:
    """``explain_refusal`` over a blocking socket."""
    try:
        body = _exchange_blocking(host, port, security, timeout, ask_sasl=True)
    except (*_NO_ANSWER, KafkaError):
        return None
    return _refusal(host, port, security, body)
