"""Quorum configuration: Kafka-named settings, validation and the Raft-port security rule."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from metadata.addresses import parse_voter_list
from kraft.errors import QuorumConfigError

PASSWORD_KEY = "controller.quorum.password"
VOTERS_KEY = "controller.quorum.voters"

Resolver = Callable[[str], list[str]]


@dataclass(frozen=True)
class QuorumConfig:
    """Settings of one quorum member (a voter, or an observer when `is_voter` is False).

    Timing fields follow Kafka's KRaft names (in the comments); pysyncobj is configured from them.
    """

    node_id: int
    # controller.quorum.voters: node id -> (host, Raft port) of every voter.
    voters: Mapping[int, tuple[str, int]]
    # metadata.log.dir: the journal and the snapshot of this node live here.
    log_dir: Path
    # controller.quorum.password: encrypts and authenticates the Raft port (pysyncobj + Fernet).
    password: str | None = None
    # False: observer (pysyncobj read-only node) that follows the log but never votes.
    is_voter: bool = True
    # metadata.log.max.snapshot.interval: take a snapshot once this many entries were appended
    # since the last one. Raftka's entry-count companion of the byte limit below (pysyncobj's
    # logCompactionMinEntries, which must be at least 2).
    snapshot_interval_entries: int = 5000
    # metadata.log.max.record.bytes.between.snapshots
    snapshot_interval_bytes: int = 20 * 1024 * 1024
    # metadata.log.max.snapshot.interval.ms; 0 disables time-based snapshots.
    snapshot_interval_ms: int = 3_600_000
    # controller.quorum.election.timeout.ms: silence from the leader before a follower stands.
    election_timeout_ms: int = 1000
    # controller.quorum.election.backoff.max.ms: random extra wait, spreads candidates apart.
    election_backoff_max_ms: int = 1000
    # controller.quorum.fetch.timeout.ms: a leader that hears from no majority for 1.5 times
    # this steps down (Kafka's check-quorum); also the peer connection idle timeout.
    fetch_timeout_ms: int = 2000
    # controller.quorum.request.timeout.ms: default deadline of append / wait_* calls.
    request_timeout_ms: int = 2000
    # Leader heartbeat (AppendEntries) period; below a third of the election timeout.
    heartbeat_interval_ms: int = 100
    # Wait between reconnect attempts to an unreachable peer (Kafka: reconnect.backoff.ms).
    reconnect_backoff_ms: int = 500
    # Force the journal to disk before any message that acknowledges it leaves this node, as
    # Kafka flushes its metadata log. Off: survives a process crash, not a power loss.
    fsync: bool = True
    # Address the Raft port binds to; default: this voter's own host (never 0.0.0.0 implicitly).
    bind_host: str | None = None
    # Local address of this member's outgoing peer connections (None: the kernel chooses).
    source_host: str | None = None
    resolver: Resolver | None = field(default=None, compare=False, repr=False)

    @property
    def self_address(self) -> tuple[str, int] | None:
        """This node's (host, port) when it is a voter, else None."""
        return self.voters.get(self.node_id) if self.is_voter else None


def parse_voters(text: str) -> dict[int, tuple[str, int]]:
    """Parse Kafka's `controller.quorum.voters` form: `1@host:port,2@[::1]:port`."""
    try:
        return parse_voter_list(text)
    except ValueError as exc:
        raise QuorumConfigError(f"{VOTERS_KEY}: {exc}") from None


def validate(config: QuorumConfig) -> None:
    """Raise QuorumConfigError, naming the key, for an invalid or unsafe configuration."""
    if not config.voters:
        raise QuorumConfigError(f"{VOTERS_KEY} is empty")
    for node_id, (host, port) in config.voters.items():
        if not host or not 0 < port < 65536:
            raise QuorumConfigError(f"{VOTERS_KEY}: bad address {host}:{port} for node {node_id}")
    addresses = [format_address(host, port) for host, port in config.voters.values()]
    if len(set(addresses)) != len(addresses):
        raise QuorumConfigError(f"{VOTERS_KEY}: two voters share an address")
    if config.is_voter and config.node_id not in config.voters:
        raise QuorumConfigError(f"node.id {config.node_id} is not in {VOTERS_KEY}")
    if not config.is_voter and config.node_id in config.voters:
        raise QuorumConfigError(f"node.id {config.node_id} is a voter in {VOTERS_KEY} but runs as an observer")
    if config.snapshot_interval_entries < 2:
        raise QuorumConfigError("snapshot interval (entries) must be at least 2")
    if config.snapshot_interval_bytes < 1:
        raise QuorumConfigError("metadata.log.max.record.bytes.between.snapshots must be at least 1")
    if config.snapshot_interval_ms < 0:
        raise QuorumConfigError("metadata.log.max.snapshot.interval.ms must be at least 0")
    if config.election_timeout_ms <= 3 * config.heartbeat_interval_ms:
        raise QuorumConfigError(
            "controller.quorum.election.timeout.ms must exceed three heartbeat intervals")
    if config.election_backoff_max_ms < 1:
        raise QuorumConfigError("controller.quorum.election.backoff.max.ms must be at least 1")
    if config.fetch_timeout_ms <= config.heartbeat_interval_ms:
        raise QuorumConfigError("controller.quorum.fetch.timeout.ms must exceed the heartbeat interval")
    if config.request_timeout_ms < 0:
        raise QuorumConfigError("controller.quorum.request.timeout.ms must be at least 0")
    if config.reconnect_backoff_ms < 0:
        raise QuorumConfigError("reconnect backoff must be at least 0")
    check_raft_port_security(config)


def check_raft_port_security(config: QuorumConfig) -> None:
    """pysyncobj unpickles what its port receives: beyond loopback it must be password-protected."""
    if config.password:
        return
    resolver = config.resolver or resolve_host
    hosts = [host for host, _ in config.voters.values()]
    if config.is_voter and config.bind_host is not None:
        hosts.append(config.bind_host)
    exposed = sorted({host for host in hosts if not is_loopback(host, resolver)})
    if exposed:
        raise QuorumConfigError(
            f"{PASSWORD_KEY} must be set: the Raft port speaks pickle and these voter addresses "
            f"are not loopback: {', '.join(exposed)}")


def is_loopback(host: str, resolver: Resolver) -> bool:
    """True when every address `host` stands for is a loopback address."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        resolved = resolver(host)
    except OSError:
        return False
    return bool(resolved) and all(ipaddress.ip_address(ip).is_loopback for ip in resolved)


def resolve_host(host: str) -> list[str]:
    """All IP addresses `host` resolves to."""
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    return sorted({str(info[4][0]).split("%", 1)[0] for info in infos})


def format_address(host: str, port: int) -> str:
    """pysyncobj's node id for an address: `host:port` (IPv6 without brackets, as it splits on the last colon)."""
    return f"{host}:{port}"
