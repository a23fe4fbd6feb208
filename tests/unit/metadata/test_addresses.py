"""The shared `host:port` and voter-list parser."""

from __future__ import annotations

import pytest

from metadata.addresses import parse_host_port, parse_voter_list


def test_host_port_forms() -> None:
    assert parse_host_port("localhost:9092") == ("localhost", 9092)
    assert parse_host_port("[::1]:9093") == ("::1", 9093)
    assert parse_host_port(":9094", allow_empty_host=True) == ("", 9094)


@pytest.mark.parametrize("text, reason", [
    ("localhost", "has no port"),
    ("::1:9093", "must be in brackets"),
    ("[::1]9093", "malformed address"),
    (":9094", "has no host"),
    ("host:65536", "bad port"),
    ("host:x", "bad port"),
])
def test_host_port_rejects(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_host_port(text)


def test_voter_list_skips_blanks_and_keeps_order() -> None:
    voters = parse_voter_list(" 3@h3:3 ,, 1@[::1]:1,2@h2:2")
    assert list(voters.items()) == [(3, ("h3", 3)), (1, ("::1", 1)), (2, ("h2", 2))]


@pytest.mark.parametrize("text, reason", [
    ("h:1", "expected ID@host:port"),
    ("-1@h:1", "expected ID@host:port"),
    ("1@h:0", "fixed port"),
    ("1@h:1,1@h:2", "appears twice"),
    ("1@:1", "has no host"),
])
def test_voter_list_rejects(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_voter_list(text)
