"""Decommissioning: `raftka cluster unregister --id N` removes a broker that is gone for
good (UnregisterBroker, forwarded to the active controller)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cluster.testing.metrics import metrics_url, scrape, value
from tests.conftest import REPO_ROOT
from tests.integration.quorum_helpers import (
    QuorumCluster,
    listed_brokers,
    metadata,
    start_cluster,  # noqa: F401  (fixture)
    wait_for,
)

pytestmark = pytest.mark.slow


def raftka(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "broker.cli.main", *args], capture_output=True,
                          text=True, timeout=90, cwd=REPO_ROOT, stdin=subprocess.DEVNULL)


def test_unregister_removes_a_stopped_broker(start_cluster):
    cluster: QuorumCluster = start_cluster(3, controllers=1)  # controller 1, brokers 2-4
    bootstrap = f"127.0.0.1:{cluster.client_port(2)}"
    controller_metrics = metrics_url("127.0.0.1", cluster.node(1).metrics_port)

    def registered() -> float | None:
        return value(scrape(controller_metrics),
                     "kafka_controller_kafkacontroller_registeredbrokercount")

    wait_for(lambda: registered() == 3, 15, "three registered brokers")
    cluster.terminate(4)
    wait_for(lambda: 4 not in listed_brokers(metadata(cluster.client_port(2)) or {}), 30,
             "broker 4 to leave the Metadata broker list")
    assert registered() == 3  # stopped, fenced, still registered
    result = raftka("cluster", "unregister", "--bootstrap-server", bootstrap, "--id", "4")
    assert (result.returncode, result.stdout, result.stderr) == (
        0, "Broker 4 is no longer registered.\n", "")
    wait_for(lambda: registered() == 2, 15, "two registered brokers")
    again = raftka("cluster", "unregister", "--bootstrap-server", bootstrap, "--id", "4")
    assert (again.returncode, again.stderr.splitlines()) == (
        1, ["Error: Broker 4 is not registered."])
    cluster_id = raftka("cluster", "cluster-id", "--bootstrap-server", bootstrap)
    assert cluster_id.stdout == f"Cluster ID: {cluster.info.cluster_id}\n"
