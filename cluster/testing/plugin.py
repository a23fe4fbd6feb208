"""The pytest plugin (entry point ``pytest11``: ``raftka``): real Raftka clusters as
fixtures.

``raftka_cluster(nodes=3, hosts=None, node_config=None, **server_config)`` starts a cluster
for the test and kills it when the test ends, passed or failed;
``raftka_session_cluster(...)`` keeps one cluster per distinct set of arguments for the
whole session. Both start clusters through
``cluster.launcher`` on free ports of ``RAFTKA_TEST_PORT_RANGE``, in pytest's temporary
directories.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping, Sequence

import pytest

from cluster.testing.cluster import RaftkaCluster, start_cluster

ClusterFactory = Callable[..., RaftkaCluster]


@pytest.fixture
def raftka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterFactory]:
    """A factory starting clusters that live until the end of the test."""
    started: list[RaftkaCluster] = []

    def start(nodes: int = 3, hosts: Sequence[str] | None = None,
              node_config: Mapping[int, Mapping[str, Any]] | None = None,
              **server_config: Any) -> RaftkaCluster:
        cluster = start_cluster(tmp_path_factory.mktemp("raftka"), nodes, hosts, node_config,
                                **server_config)
        started.append(cluster)
        return cluster

    try:
        yield start
    finally:
        for cluster in started:
            cluster.close()


@pytest.fixture(scope="session")
def raftka_session_cluster(tmp_path_factory: pytest.TempPathFactory
                           ) -> Iterator[ClusterFactory]:
    """A factory of clusters shared by the session: the same arguments give the same
    cluster (tests must then use topics of their own)."""
    started: dict[tuple[int, tuple[tuple[str, str], ...]], RaftkaCluster] = {}

    def start(nodes: int = 3, **server_config: Any) -> RaftkaCluster:
        key = (nodes, tuple(sorted((k, str(v)) for k, v in server_config.items())))
        if key not in started:
            started[key] = start_cluster(tmp_path_factory.mktemp("raftka-session"), nodes,
                                         **server_config)
        return started[key]

    try:
        yield start
    finally:
        for cluster in started.values():
            cluster.close()
