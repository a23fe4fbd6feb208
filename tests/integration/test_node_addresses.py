"""Each node on its own loopback address: listeners, Raft port and every outgoing
connection (replica fetchers, the controller channel, Raft peers) use it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cluster.launcher import load_cluster, stop_quorum
from cluster.launcher.ports import pick_base_port
from cluster.testing.sockets import outgoing_connections, tcp_sockets
from cluster.testing.waiting import wait_for
from clients.protocol import ApiKey
from tests.integration.fault_support import node_hosts, produce, request

pytestmark = pytest.mark.slow


def test_each_node_listens_and_connects_from_its_own_address(raftka_cluster) -> None:
    hosts = node_hosts(3)
    cluster = raftka_cluster(3, hosts=hosts)
    cluster.create_topic("addresses", partitions=3, replication_factor=3)
    leader_host, port = hosts[0], cluster.info.node(1).client_port
    assert produce(leader_host, port, "addresses", b"x", acks=-1)["error_code"] in (0, 6)
    by_host = {cluster.host(n): n for n in cluster.node_ids}
    assert sorted(by_host) == sorted(hosts)

    def peers_seen() -> dict[int, set[str]] | None:
        # Each node must have reached the two others (fetchers to their leaders, Raft,
        # the controller channel), or the check below proves little.
        seen = {}
        for node in cluster.node_ids:
            remotes = {s.remote[0] for s in outgoing_connections(cluster.pid(node))}
            seen[node] = remotes
        reached = all(len(r - {cluster.host(n)}) >= 1 for n, r in seen.items())
        return seen if reached and sum(len(r) for r in seen.values()) >= 5 else None

    wait_for(peers_seen, "every node to connect to its peers", 30)
    for node in cluster.node_ids:
        own = cluster.host(node)
        sockets = tcp_sockets(cluster.pid(node))
        listening = {s.local for s in sockets if s.listening}
        assert listening and {host for host, _ in listening} == {own}, listening
        outgoing = outgoing_connections(cluster.pid(node))
        assert outgoing
        wrong = [s for s in outgoing if s.local[0] != own]
        assert not wrong, f"node {node} ({own}) connected from another address: {wrong}"
        # Its connections reach the other nodes' own addresses, never 127.0.0.1.
        assert {s.remote[0] for s in outgoing} <= set(hosts)


def test_bootstrap_quorum_hosts_flag(tmp_path) -> None:
    hosts = node_hosts(3)
    base = pick_base_port(3)
    result = subprocess.run(
        [sys.executable, "-m", "cluster.launcher.bootstrap", "--dir", str(tmp_path / "c"),
         "--hosts", ",".join(hosts), "--base-port", str(base)],
        capture_output=True, text=True, timeout=90)
    try:
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == ",".join(f"{h}:{base + i}" for i, h in enumerate(hosts))
        cluster = load_cluster(tmp_path / "c")
        assert [n.host for n in cluster.nodes] == hosts
        metadata = request(hosts[1], base + 1, ApiKey.METADATA, {
            "topics": None, "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False})
        assert metadata is not None
        assert {(b["host"], b["port"]) for b in metadata["brokers"]} == \
            {(h, base + i) for i, h in enumerate(hosts)}
    finally:
        stop_quorum(tmp_path / "c", kill=True)


def test_bootstrap_quorum_refuses_bad_hosts(tmp_path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cluster.launcher.bootstrap", "--dir", str(tmp_path / "c"),
         "--hosts", "127.0.0.11,10.1.2.3,127.0.0.13"],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip() == ("bootstrap-quorum: --hosts: 10.1.2.3 is not a loopback "
                                     "address (127.0.0.0/8)")
