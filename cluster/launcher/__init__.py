"""Local cluster launcher behind scripts/bootstrap-quorum, start-node and stop-quorum."""

from cluster.launcher.cluster import bootstrap_quorum, load_cluster, start_node, stop_quorum
from cluster.launcher.layout import ClusterInfo, NodeInfo, plan_cluster
from cluster.launcher.processes import LauncherError
from cluster.launcher.readiness import (
    READINESS_CHECKS,
    ReadinessCheck,
    kraft_ready,
    listening_ready,
)

__all__ = [
    "READINESS_CHECKS",
    "ClusterInfo",
    "LauncherError",
    "NodeInfo",
    "ReadinessCheck",
    "bootstrap_quorum",
    "kraft_ready",
    "listening_ready",
    "load_cluster",
    "plan_cluster",
    "start_node",
    "stop_quorum",
]
