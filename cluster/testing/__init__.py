"""Real Raftka clusters for tests: ``RaftkaCluster`` and the pytest plugin
(``raftka_cluster`` fixtures), both over ``cluster.launcher``, the code path of
scripts/bootstrap-quorum."""

from cluster.testing.cluster import RaftkaCluster, start_cluster

__all__ = ["RaftkaCluster", "start_cluster"]
