"""bootstrap-quorum --hosts: the planned layout puts each node on its own address."""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster.launcher.bootstrap import parse_hosts
from cluster.launcher.layout import plan_cluster

HOSTS = ["127.0.0.11", "127.0.0.12", "127.0.0.13"]


def test_each_node_listens_on_its_own_host(tmp_path: Path) -> None:
    cluster = plan_cluster(tmp_path, "x", 3, 0, 30000, hosts=HOSTS)
    for node, host in zip(cluster.nodes, HOSTS):
        assert node.host == host
        assert node.properties["listeners"] == (
            f"PLAINTEXT://{host}:{node.client_port},CONTROLLER://{host}:{node.controller_port}")
        assert node.properties["advertised.listeners"] == f"PLAINTEXT://{host}:{node.client_port}"
    assert cluster.nodes[0].properties["controller.quorum.voters"] == (
        "1@127.0.0.11:30100,2@127.0.0.12:30101,3@127.0.0.13:30102")
    assert cluster.bootstrap_servers == "127.0.0.11:30000,127.0.0.12:30001,127.0.0.13:30002"


def test_default_is_one_shared_loopback_address(tmp_path: Path) -> None:
    cluster = plan_cluster(tmp_path, "x", 2)
    assert {node.host for node in cluster.nodes} == {"127.0.0.1"}


@pytest.mark.parametrize("hosts, message", [
    (["127.0.0.11", "127.0.0.12"], "lists 2 addresses for 3 nodes"),
    (["127.0.0.11", "127.0.0.11", "127.0.0.13"], "an address of its own"),
    (["127.0.0.11", "10.0.0.2", "127.0.0.13"], "not a loopback address"),
    (["127.0.0.11", "node-b", "127.0.0.13"], "not an IPv4 address"),
])
def test_bad_hosts_are_refused(tmp_path: Path, hosts: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        plan_cluster(tmp_path, "x", 3, hosts=hosts)


def test_hosts_argument_is_a_comma_list() -> None:
    assert parse_hosts("127.0.0.11, 127.0.0.12,") == ["127.0.0.11", "127.0.0.12"]
