"""The Raft port: loopback-only without a password; with one, strangers cannot inject commands."""

from __future__ import annotations

import pickle
import socket
import struct
import zlib
from pathlib import Path

import pytest
from pysyncobj.encryptor import getEncryptor

from kraft import QuorumConfig, QuorumConfigError, RaftQuorum
from kraft.command import encode_command
from tests.unit.kraft.support import ListStateMachine, free_ports, wait_until

PASSWORD = "quorum-secret"


def frame(message: object, password: str | None = None) -> bytes:
    """A pysyncobj wire frame: native int length, zlib(pickle), Fernet-encrypted with a password."""
    data = zlib.compress(pickle.dumps(message, 2), 3)
    if password is not None:
        data = getEncryptor(password).encrypt(data)
    return struct.pack("i", len(data)) + data


def inject(port: int, epoch: int, record: bytes, password: str | None = None) -> socket.socket:
    """Connect as a read-only node and ask the leader to append a command."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    messages: list[object] = [b"k" * 32] if password is not None else []  # handshake: our random key
    messages += ["readonly", {"type": "apply_command", "command": encode_command(epoch, [record])}]
    try:
        for message in messages:
            sock.sendall(frame(message, password))
    except (BrokenPipeError, ConnectionResetError):
        pass  # already dropped by the peer; closed_by_peer() will see it
    return sock


def closed_by_peer(sock: socket.socket) -> bool:
    try:
        while True:
            if not sock.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def test_non_loopback_voter_without_password_is_refused(tmp_path: Path) -> None:
    config = QuorumConfig(node_id=1, voters={1: ("127.0.0.1", 20001), 2: ("10.20.30.40", 20002)},
                          log_dir=tmp_path)
    with pytest.raises(QuorumConfigError, match="controller.quorum.password") as info:
        RaftQuorum(config, ListStateMachine()).start()
    assert "10.20.30.40" in str(info.value)


def test_hostname_resolving_beyond_loopback_without_password_is_refused(tmp_path: Path) -> None:
    config = QuorumConfig(node_id=1, voters={1: ("ctrl-1.example", 20001)}, log_dir=tmp_path,
                          resolver=lambda host: ["192.0.2.7"])
    with pytest.raises(QuorumConfigError, match="controller.quorum.password"):
        RaftQuorum(config, ListStateMachine()).start()


def test_wildcard_bind_without_password_is_refused(tmp_path: Path) -> None:
    config = QuorumConfig(node_id=1, voters={1: ("127.0.0.1", 20001)}, log_dir=tmp_path, bind_host="0.0.0.0")
    with pytest.raises(QuorumConfigError, match="controller.quorum.password"):
        RaftQuorum(config, ListStateMachine()).start()


def test_loopback_voter_binds_loopback_only(tmp_path: Path) -> None:
    (port,) = free_ports(1)
    quorum = RaftQuorum(QuorumConfig(node_id=1, voters={1: ("127.0.0.1", port)}, log_dir=tmp_path),
                        ListStateMachine())
    quorum.start()
    try:
        listening = Path("/proc/net/tcp").read_text().splitlines()[1:]
        local = [line.split()[1] for line in listening if line.split()[3] == "0A"]  # LISTEN
        ours = [address for address in local if int(address.split(":")[1], 16) == port]
        assert ours == ["0100007F:%04X" % port]  # 127.0.0.1, not 0.0.0.0
    finally:
        quorum.close()


async def test_crafted_command_applies_without_password_control_case(cluster_factory) -> None:
    # Proves the crafted message is a valid pysyncobj command, so the protected cases below mean something.
    cluster = cluster_factory(1)
    cluster.start_all()
    quorum = await cluster.leader()
    machine = next(iter(cluster.machines.values()))
    port = quorum.config.voters[quorum.config.node_id][1]
    sock = inject(port, quorum.status().epoch, b"injected")
    try:
        await wait_until(lambda: b"injected" in machine.records(), 5, "the injected command")
    finally:
        sock.close()


@pytest.mark.parametrize("attacker_password", [None, "wrong-password"], ids=["no-password", "wrong-password"])
async def test_password_protected_quorum_rejects_strangers(cluster_factory, attacker_password: str | None) -> None:
    cluster = cluster_factory(3, password=PASSWORD)
    cluster.start_all()
    leader = await cluster.leader()
    await leader.append([b"legit-1"])
    port = leader.config.voters[leader.config.node_id][1]
    sock = inject(port, leader.status().epoch, b"injected", attacker_password)
    sock.settimeout(5)
    try:
        assert closed_by_peer(sock), "the leader should drop a connection it cannot authenticate"
    finally:
        sock.close()
    await leader.append([b"legit-2"])  # ordered after the rejected attempt
    await wait_until(lambda: all(m.records() == [b"legit-1", b"legit-2"] for m in cluster.machines.values()),
                     5, "every voter to apply the legitimate commands only")
