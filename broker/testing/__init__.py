"""Real Raftka clusters for tests: ``RaftkaCluster`` and the pytest plugin
(``raftka_cluster`` fixtures), both over ``broker.launcher``, the code path of
scripts/bootstrap-quorum."""

from broker.testing.cluster import RaftkaCluster, start_cluster

__all__ = ["RaftkaCluster", "start_cluster"]
