"""The SASL state machine of one connection: handshake, PLAIN and SCRAM steps, the bare
token form, what is admitted before authentication, failures, and KIP-368 expiry."""

from __future__ import annotations

import pytest
import scramp

from broker.sasl.mechanisms import INVALID_CREDENTIALS, SaslAuthenticationError
from broker.sasl.session import (
    API_VERSIONS,
    ILLEGAL_SASL_STATE,
    SASL_AUTHENTICATE,
    SASL_AUTHENTICATION_FAILED,
    SASL_HANDSHAKE,
    UNSUPPORTED_SASL_MECHANISM,
    ListenerSasl,
    SaslSession,
    State,
)
from metadata.scram import ScramCredential

METADATA = 3
PRODUCE = 0


class Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


def scram_credential(mechanism: str, password: str) -> ScramCredential:
    salt, stored, server, iterations = scramp.ScramMechanism(mechanism).make_auth_info(
        password, iteration_count=4096)
    return ScramCredential(salt, stored, server, iterations)


CREDENTIALS = {("alice", "SCRAM-SHA-512"): scram_credential("SCRAM-SHA-512", "alice-pw"),
               ("a,b=c", "SCRAM-SHA-256"): scram_credential("SCRAM-SHA-256", "odd")}


def session(mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
            reauth_ms: int = 0, clock: Clock | None = None) -> SaslSession:
    settings = ListenerSasl(mechanisms, {"bob": "bob-pw", "carol": "carol-pw"}, reauth_ms)
    return SaslSession(settings, lambda user, mech: CREDENTIALS.get((user, mech)),
                       clock or Clock())


def scram_login(s: SaslSession, mechanism: str, user: str, password: str) -> int:
    assert s.handshake(mechanism, 1).error_code == 0
    client = scramp.ScramClient([mechanism], user, password)
    first = s.authenticate(client.get_client_first().encode())
    if first.error_code:
        return first.error_code
    client.set_server_first(first.token.decode())
    final = s.authenticate(client.get_client_final().encode())
    if final.error_code:
        return final.error_code
    client.set_server_final(final.token.decode())
    return 0


def test_plain_success_sets_the_principal_and_admits_everything() -> None:
    s = session()
    assert s.admit(API_VERSIONS) is None and s.admit(SASL_HANDSHAKE) is None
    assert s.handshake("PLAIN", 1).error_code == 0
    step = s.authenticate(b"\x00bob\x00bob-pw")
    assert (step.error_code, step.close) == (0, False)
    assert s.authenticated and s.principal_name == "bob"
    assert s.admit(METADATA) is None and s.admit(PRODUCE) is None


@pytest.mark.parametrize("token", [b"\x00bob\x00wrong", b"\x00nobody\x00bob-pw",
                                   b"bob\x00bob-pw", b"\x00bob\x00", b"\xff\x00bob\x00x",
                                   b"eve\x00bob\x00bob-pw"])
def test_plain_failures_close_and_tell_nothing_about_which_part_was_wrong(token: bytes) -> None:
    s = session()
    s.handshake("PLAIN", 1)
    step = s.authenticate(token)
    assert step.error_code == SASL_AUTHENTICATION_FAILED and step.close
    assert not s.authenticated and s.state is State.FAILED
    assert s.admit(METADATA) is not None


@pytest.mark.parametrize("mechanism,user,password", [
    ("SCRAM-SHA-512", "alice", "alice-pw"), ("SCRAM-SHA-256", "a,b=c", "odd")])
def test_scram_success(mechanism: str, user: str, password: str) -> None:
    s = session()
    assert scram_login(s, mechanism, user, password) == 0
    assert s.authenticated and s.principal_name == user


@pytest.mark.parametrize("mechanism,user,password", [
    ("SCRAM-SHA-512", "alice", "wrong"), ("SCRAM-SHA-512", "nobody", "x"),
    ("SCRAM-SHA-256", "alice", "alice-pw")])  # no SHA-256 credential for alice
def test_scram_failures(mechanism: str, user: str, password: str) -> None:
    s = session()
    assert scram_login(s, mechanism, user, password) == SASL_AUTHENTICATION_FAILED
    assert not s.authenticated and s.state is State.FAILED


def test_garbage_scram_messages_fail_cleanly() -> None:
    for token in (b"", b"n,,", b"\xff\xfe", b"p=tls-unique,,n=x,r=y", b"n,,n=alice"):
        s = session()
        s.handshake("SCRAM-SHA-512", 1)
        step = s.authenticate(token)
        assert step.error_code == SASL_AUTHENTICATION_FAILED and step.close, token


def test_unsupported_mechanism_lists_the_enabled_ones_and_closes() -> None:
    s = session(("SCRAM-SHA-512",))
    step = s.handshake("PLAIN", 1)
    assert step.error_code == UNSUPPORTED_SASL_MECHANISM and step.close
    assert s.enabled_mechanisms == ("SCRAM-SHA-512",)


@pytest.mark.parametrize("api_key", [METADATA, PRODUCE, SASL_AUTHENTICATE])
def test_requests_before_the_handshake_are_refused(api_key: int) -> None:
    s = session()
    assert s.admit(api_key) is not None
    assert s.state is State.FAILED


def test_authenticate_before_handshake_is_illegal() -> None:
    s = session()
    step = s.authenticate(b"\x00bob\x00bob-pw")
    assert step.error_code == ILLEGAL_SASL_STATE and step.close


def test_a_second_handshake_before_authenticating_is_refused() -> None:
    s = session()
    s.handshake("PLAIN", 1)
    assert s.admit(SASL_HANDSHAKE) is not None


def test_handshake_v0_switches_to_bare_tokens() -> None:
    s = session()
    assert s.handshake("PLAIN", 0).error_code == 0
    assert s.expects_raw_token
    assert s.raw_token(b"\x00bob\x00bob-pw") == b""
    assert s.authenticated and not s.expects_raw_token
    failed = session()
    failed.handshake("PLAIN", 0)
    with pytest.raises(SaslAuthenticationError, match=INVALID_CREDENTIALS):
        failed.raw_token(b"\x00bob\x00nope")
    with pytest.raises(SaslAuthenticationError):
        failed.raw_token(b"\x00bob\x00bob-pw")


def test_session_lifetime_and_expiry() -> None:
    clock = Clock()
    s = session(reauth_ms=5_000, clock=clock)
    s.handshake("PLAIN", 1)
    assert s.authenticate(b"\x00bob\x00bob-pw").session_lifetime_ms == 5_000
    clock.now += 4_999
    assert s.admit(METADATA) is None
    clock.now += 1
    assert "expired" in (s.admit(METADATA) or "")


def test_reauthentication_renews_the_session() -> None:
    clock = Clock()
    s = session(reauth_ms=5_000, clock=clock)
    s.handshake("PLAIN", 1)
    s.authenticate(b"\x00bob\x00bob-pw")
    clock.now += 6_000
    assert s.admit(SASL_HANDSHAKE) is None
    assert s.handshake("PLAIN", 1).error_code == 0
    assert s.admit(METADATA) is not None  # nothing else while re-authenticating
    s2 = session(reauth_ms=5_000, clock=clock)
    s2.handshake("PLAIN", 1)
    s2.authenticate(b"\x00bob\x00bob-pw")
    clock.now += 6_000
    s2.handshake("PLAIN", 1)
    assert s2.authenticate(b"\x00bob\x00bob-pw").error_code == 0
    assert s2.admit(METADATA) is None


def test_reauthentication_cannot_change_principal_or_mechanism() -> None:
    s = session(reauth_ms=5_000)
    assert scram_login(s, "SCRAM-SHA-512", "alice", "alice-pw") == 0
    assert s.handshake("PLAIN", 1).error_code == ILLEGAL_SASL_STATE
    s = session(reauth_ms=5_000)
    s.handshake("PLAIN", 1)
    s.authenticate(b"\x00bob\x00bob-pw")
    s.handshake("PLAIN", 1)
    step = s.authenticate(b"\x00carol\x00carol-pw")
    assert step.error_code == SASL_AUTHENTICATION_FAILED and step.close
    assert "principal" in (step.error_message or "")
