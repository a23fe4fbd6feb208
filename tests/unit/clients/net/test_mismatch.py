"""Telling a refused authentication and a security protocol mismatch from a broker going
away: the pure parts (what a listener's answer looks like, the SASL exchange's errors, the
TLS handshake's failure kinds, the pool's unreachable error, the notice of an unreachable
cluster)."""

from __future__ import annotations

import logging
import ssl

import pytest

from clients.common.connections import _unreachable
from clients.admin.retries import should_retry
from clients.net import (
    AuthenticationFailedError,
    FatalConnectionError,
    KafkaConnectionError,
    SecurityProtocolMismatchError,
    TlsHandshakeError,
)
from clients.net.errors import TlsHandshakeClosedError
from clients.net.failure_log import UnreachableNotice
from clients.net.mismatch import looks_like_tls, refused_before_authentication
from clients.net.sasl import SaslCredentials, sasl_steps
from clients.net.security import _handshake_error
from clients.net.session import ProtocolSession
from clients.protocol import ApiKey, ErrorCode, KafkaError, encode_response


def test_a_tls_record_is_told_from_a_kafka_frame() -> None:
    assert looks_like_tls(bytes([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46]))  # an alert
    assert looks_like_tls(bytes([0x16, 0x03, 0x01]))                          # a handshake
    assert not looks_like_tls(bytes([0x00, 0x00, 0x01, 0x2c]))  # a 300-byte Kafka frame
    assert not looks_like_tls(b"\x15")


def test_a_sasl_listeners_refusal_is_recognised() -> None:
    assert refused_before_authentication(ApiKey.FIND_COORDINATOR, {"error_code": 34})
    refused = {"brokers": [], "cluster_id": None, "controller_id": -1,
               "topics": [{"name": "t", "error_code": 34}]}
    assert refused_before_authentication(ApiKey.METADATA, refused)
    # Metadata for no topic: nothing carries the error, but a broker names itself.
    assert refused_before_authentication(ApiKey.METADATA, {**refused, "topics": []})
    answered = {"brokers": [{"node_id": 1}], "cluster_id": "c", "topics": []}
    assert not refused_before_authentication(ApiKey.METADATA, answered)
    unknown_topic = {**answered, "topics": [{"name": "t", "error_code": 3}]}
    assert not refused_before_authentication(ApiKey.METADATA, unknown_topic)
    assert not refused_before_authentication(ApiKey.FIND_COORDINATOR, {"error_code": 15})


def _answers(session: ProtocolSession, credentials: SaslCredentials,
             replies: list[dict]) -> None:
    """Drive the SASL exchange, answering each request with the next reply's body."""
    steps = sasl_steps(session, credentials, "h", 9093, "SASL_SSL")
    request = next(steps)
    for reply in replies:
        frame = encode_response(request.api_key, request.api_version,
                                request.correlation_id, reply)
        request = steps.send(frame)


def _session() -> ProtocolSession:
    session = ProtocolSession("test")
    versions = {"api_keys": [{"api_key": 17, "min_version": 0, "max_version": 1},
                             {"api_key": 36, "min_version": 0, "max_version": 2}]}
    request = session.api_versions_request()
    session.apply_api_versions(request, encode_response(
        ApiKey.API_VERSIONS, request.api_version, request.correlation_id, versions))
    return session


ALICE = SaslCredentials("PLAIN", "alice", "wrong")


def test_refused_credentials_are_a_fatal_error_with_the_brokers_message() -> None:
    with pytest.raises(AuthenticationFailedError) as refused:
        _answers(_session(), ALICE, [
            {"error_code": 0, "mechanisms": ["PLAIN"]},
            {"error_code": 58, "error_message":
             "Authentication failed: Invalid username or password", "auth_bytes": b""}])
    error = refused.value
    assert str(error) == ("authentication failed at h:9093 (PLAIN as alice): "
                          "Authentication failed: Invalid username or password")
    assert error.code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert isinstance(error, KafkaError) and isinstance(error, FatalConnectionError)
    assert not should_retry(error)


def test_a_mechanism_the_listener_lacks_names_what_it_offers() -> None:
    with pytest.raises(AuthenticationFailedError) as refused:
        _answers(_session(), ALICE, [{"error_code": 33, "mechanisms": ["SCRAM-SHA-512"]}])
    assert refused.value.code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert "SASL mechanism PLAIN is not enabled there (it offers SCRAM-SHA-512)" in \
        str(refused.value)


def test_a_listener_without_sasl_refusing_the_handshake_is_a_mismatch() -> None:
    with pytest.raises(SecurityProtocolMismatchError) as mismatch:
        _answers(_session(), ALICE, [{"error_code": 34, "mechanisms": []}])
    assert str(mismatch.value) == (
        "security protocol mismatch: h:9093 refused SaslHandshake, so it is not a SASL "
        "listener, but security.protocol is SASL_SSL; use SSL")


def test_a_handshake_the_peer_closed_is_retried_and_a_tls_refusal_is_not() -> None:
    closed = _handshake_error("h", 1, ssl.SSLEOFError(8, "EOF occurred in violation"))
    assert isinstance(closed, TlsHandshakeClosedError) and should_retry(closed)
    reset = _handshake_error("h", 1, ConnectionResetError(104, "reset"))
    assert isinstance(reset, TlsHandshakeClosedError)
    untrusted = ssl.SSLCertVerificationError(1, "certificate verify failed")
    untrusted.verify_message = "self-signed certificate"
    refused = _handshake_error("h", 1, untrusted)
    assert isinstance(refused, TlsHandshakeError) and not should_retry(refused)
    assert str(refused) == "TLS handshake with h:1 failed: self-signed certificate"


def test_the_unreachable_error_names_the_bootstrap_servers() -> None:
    refused = KafkaConnectionError("cannot connect to h:1: refused")
    error = _unreachable([refused], [("h", 1), ("g", 2)])
    assert str(error) == "no broker reachable at h:1,g:2: cannot connect to h:1: refused"
    assert should_retry(error)
    wrong = AuthenticationFailedError(58, "authentication failed at h:1: no")
    assert _unreachable([wrong, wrong], [("h", 1)]) is wrong
    assert type(_unreachable([wrong, refused], [("h", 1)])) is KafkaConnectionError


def test_an_unreachable_cluster_is_said_once_after_half_a_second(
        caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("test.notice")
    notice = UnreachableNotice(logger, "the end")
    down = KafkaConnectionError("no broker reachable at h:1: refused")
    for now in (10.0, 10.1, 10.3):
        notice.failed(down, now)
    assert not caplog.records
    notice.failed(AuthenticationFailedError(58, "no"), 10.7)  # fatal: never a notice
    assert not caplog.records
    for now in (10.7, 11.5, 12.5):
        notice.failed(down, now)
    assert [r.getMessage() for r in caplog.records] == [
        "no broker reachable at h:1: refused; still trying until the end"]
    assert caplog.records[0].levelno == logging.WARNING
    notice.succeeded()
    notice.failed(down, 20.0)
    notice.failed(down, 20.6)
    assert len(caplog.records) == 2
