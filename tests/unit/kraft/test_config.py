"""Quorum configuration parsing and validation."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from kraft import QuorumConfig, QuorumConfigError, QuorumError, RaftQuorum, parse_voters
from kraft.config import validate
from tests.unit.kraft.support import ListStateMachine, free_ports


def test_parse_voters_kafka_form() -> None:
    assert parse_voters("1@localhost:9093, 2@10.0.0.2:9094,3@[::1]:9095") == {
        1: ("localhost", 9093), 2: ("10.0.0.2", 9094), 3: ("::1", 9095)}


@pytest.mark.parametrize("text", ["1@host", "x@h:1", "1@h:1,1@h:2", "1:h:1"])
def test_parse_voters_rejects_bad_entries(text: str) -> None:
    with pytest.raises(QuorumConfigError, match="controller.quorum.voters"):
        parse_voters(text)


@pytest.mark.parametrize("changes, key", [
    (dict(voters={}), "controller.quorum.voters"),
    (dict(node_id=5), "node.id 5 is not in controller.quorum.voters"),
    (dict(is_voter=False), "runs as an observer"),
    (dict(voters={1: ("127.0.0.1", 20001), 2: ("127.0.0.1", 20001)}), "share an address"),
    (dict(election_timeout_ms=200, heartbeat_interval_ms=100), "election.timeout.ms"),
    (dict(fetch_timeout_ms=50, heartbeat_interval_ms=100), "fetch.timeout.ms"),
    (dict(snapshot_interval_entries=1), "snapshot interval"),
    (dict(snapshot_interval_ms=-1), "metadata.log.max.snapshot.interval.ms"),
])
def test_validate_names_the_bad_key(tmp_path: Path, changes: dict, key: str) -> None:
    settings = dict(node_id=1, voters={1: ("127.0.0.1", 20001)}, log_dir=tmp_path)
    settings.update(changes)
    with pytest.raises(QuorumConfigError, match=key):
        validate(QuorumConfig(**settings))


def test_password_allows_non_loopback_voters(tmp_path: Path) -> None:
    validate(QuorumConfig(node_id=1, voters={1: ("10.0.0.1", 20001)}, log_dir=tmp_path, password="s"))


def test_observer_with_loopback_voters_is_valid(tmp_path: Path) -> None:
    validate(QuorumConfig(node_id=7, voters={1: ("localhost", 20001)}, log_dir=tmp_path, is_voter=False))


def test_start_fails_cleanly_when_the_raft_port_is_taken(tmp_path: Path) -> None:
    (port,) = free_ports(1)
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", port))
        blocker.listen()
        quorum = RaftQuorum(QuorumConfig(node_id=1, voters={1: ("127.0.0.1", port)}, log_dir=tmp_path),
                            ListStateMachine())
        with pytest.raises(QuorumError, match="cannot bind"):
            quorum.start()
    quorum.close()
