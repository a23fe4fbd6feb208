"""Each node on its own loopback address: listeners, Raft port and every outgoing
connection (replica fetchers, the controller channel, Raft peers) use it."""

from __future__ import annotations

import pytest

from broker.testing.sockets import outgoing_connections, tcp_sockets
from broker.testing.waiting import wait_for
from tests.integration.fault_support import node_hosts, produce

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
