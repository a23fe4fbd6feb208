"""What a node does when it cannot start as configured (issue 21): a SASL listener, an SSL
listener without its certificate,
a taken client port, a taken Raft port each stop `raftka server start` with one line and a
non-zero exit, before the cluster sees the node; and an unclean stop leaves the indexes
sparse (real processes)."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from cluster.launcher.ports import pick_block
from clients.protocol import ApiKey
from tests.conftest import REPO_ROOT
from tests.integration.quorum_helpers import (
    QuorumCluster,
    create_topics,
    produce,
    quorum_status_cli,
    send,
    start_cluster,  # noqa: F401  (fixture)
    wait_for,
)

HOST = "127.0.0.1"
RAFT_PORT_OFFSET = 1000


def raftka(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "broker.cli.main", *args],
                          capture_output=True, text=True, timeout=timeout, cwd=REPO_ROOT,
                          stdin=subprocess.DEVNULL)


def error_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    """stderr without the node's log lines (`<date> <time> LEVEL logger: ...`)."""
    return [line for line in result.stderr.splitlines()
            if not re.match(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (DEBUG|INFO) ", line)]


METRICS_PORT_SHIFT = 3  # the metrics listener's port: client port + 3


def free_port_pair() -> tuple[int, int]:
    """A client port and a controller port whose Raft port (+1000) and metrics port are free
    too."""
    client = pick_block([0, 1, METRICS_PORT_SHIFT, 1 + RAFT_PORT_OFFSET])
    return client, client + 1


@pytest.fixture
def single_node(tmp_path: Path) -> Iterator[tuple[Path, int, int]]:
    """A formatted combined node's config on free ports: (path, client port, controller
    port)."""
    client, controller = free_port_pair()
    config = tmp_path / "server.properties"
    config.write_text(
        "process.roles=broker,controller\nnode.id=1\n"
        f"controller.quorum.voters=1@{HOST}:{controller}\n"
        f"listeners=PLAINTEXT://{HOST}:{client},CONTROLLER://{HOST}:{controller}\n"
        "controller.listener.names=CONTROLLER\n"
        f"raftka.metrics.listener=http://{HOST}:{client + METRICS_PORT_SHIFT}\n"
        f"log.dirs={tmp_path / 'data'}\n"
        "offsets.topic.replication.factor=1\ntransaction.state.log.replication.factor=1\n")
    cluster_id = raftka("storage", "random-uuid").stdout.strip()
    formatted = raftka("storage", "format", "-t", cluster_id, "-c", str(config))
    assert formatted.returncode == 0, formatted.stderr
    yield config, client, controller


def refused(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex((HOST, port)) != 0


# --- security settings that stop start-up ----------------------------------------------

def test_a_sasl_inter_broker_listener_without_credentials_stops_start_up_naming_the_key(
        single_node: tuple[Path, int, int]) -> None:
    config, client, controller = single_node
    protocol = "SASL_PLAINTEXT"
    result = raftka("server", "start", str(config), "--override",
                    f"listeners={protocol}://{HOST}:{client},CONTROLLER://{HOST}:{controller}",
                    "--override", f"inter.broker.listener.name={protocol}")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "raftka server: listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config: is "
        "required with username and password: brokers authenticate to each other with "
        "SCRAM-SHA-512"]
    assert refused(client)


def test_an_unsupported_sasl_mechanism_stops_start_up_naming_the_key(
        single_node: tuple[Path, int, int]) -> None:
    """Kafka's default mechanism, GSSAPI, is not offered: asking for it stops start-up."""
    config, client, controller = single_node
    result = raftka("server", "start", str(config), "--override",
                    f"listeners=PLAINTEXT://{HOST}:{client},SASL_PLAINTEXT://{HOST}:"
                    f"{client + 2},CONTROLLER://{HOST}:{controller}",
                    "--override", "sasl.enabled.mechanisms=GSSAPI")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "raftka server: sasl.enabled.mechanisms: mechanism GSSAPI is not supported (Raftka "
        "supports PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)"]
    assert refused(client) and refused(client + 2)


def test_an_ssl_listener_without_its_keystore_stops_start_up_naming_the_key(
        single_node: tuple[Path, int, int], tmp_path: Path) -> None:
    config, client, controller = single_node
    listeners = ["--override", f"listeners=PLAINTEXT://{HOST}:{client},"
                 f"EXTERNAL://{HOST}:{client + 2},CONTROLLER://{HOST}:{controller}",
                 "--override", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,"
                               "EXTERNAL:SSL,CONTROLLER:PLAINTEXT"]
    result = raftka("server", "start", str(config), *listeners)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "raftka server: ssl.keystore.location: is required on an SSL listener (PEM "
        "certificate and key) (listener EXTERNAL)"]
    missing = tmp_path / "missing.pem"
    result = raftka("server", "start", str(config), *listeners, "--override",
                    f"listener.name.external.ssl.keystore.location={missing}")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"raftka server: listener.name.external.ssl.keystore.location: cannot read "
        f"{missing}: No such file or directory (listener EXTERNAL)"]
    assert refused(client) and refused(client + 2)


def test_a_controller_listener_mapped_to_sasl_stops_start_up_in_one_line(
        single_node: tuple[Path, int, int]) -> None:
    config, _, controller = single_node
    result = raftka("server", "start", str(config), "--override",
                    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL")
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(
        f"raftka server: controller.listener.names: controller listener "
        f"CONTROLLER://{HOST}:{controller} uses security protocol SASL_SSL")
    assert refused(controller)


# --- taken ports ---------------------------------------------------------------------------

def test_a_taken_client_port_stops_start_up_in_one_line(
        single_node: tuple[Path, int, int]) -> None:
    config, client, controller = single_node
    with socket.socket() as taken:
        taken.bind((HOST, client))
        taken.listen()
        result = raftka("server", "start", str(config))
    assert result.returncode == 1
    assert error_lines(result) == [
        f"raftka server: cannot listen on PLAINTEXT://{HOST}:{client} (Address already in "
        "use); change the port in listeners or stop the process that holds it"]
    # Bound before anything else started: the quorum never ran, nothing registered.
    assert "quorum node 1 started" not in result.stderr
    assert "registered" not in result.stderr


def test_a_taken_metrics_port_names_its_key_in_one_line(
        single_node: tuple[Path, int, int]) -> None:
    config, client, _ = single_node
    metrics = client + METRICS_PORT_SHIFT
    with socket.socket() as taken:
        taken.bind((HOST, metrics))
        taken.listen()
        result = raftka("server", "start", str(config))
    assert result.returncode == 1
    assert error_lines(result) == [
        f"raftka server: cannot listen on http://{HOST}:{metrics}/metrics (Address already in "
        "use); change raftka.metrics.listener (empty disables it) or stop the process that "
        "holds the port"]
    assert "quorum node 1 started" not in result.stderr


def test_a_malformed_metrics_listener_stops_start_up_naming_the_key(
        single_node: tuple[Path, int, int]) -> None:
    config, client, _ = single_node
    result = raftka("server", "start", str(config), "--override",
                    "raftka.metrics.listener=https://127.0.0.1:9404")
    assert result.returncode == 1
    assert error_lines(result) == [
        "raftka server: raftka.metrics.listener: 'https://127.0.0.1:9404': expected "
        "http://HOST:PORT (https is not supported)"]


def test_a_taken_raft_port_names_its_key_in_one_line(
        single_node: tuple[Path, int, int]) -> None:
    config, _, controller = single_node
    raft_port = controller + RAFT_PORT_OFFSET
    with socket.socket() as taken:
        taken.bind((HOST, raft_port))
        taken.listen()
        result = raftka("server", "start", str(config))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert error_lines(result) == [
        f"raftka server: cannot bind the Raft port {HOST}:{raft_port}: address already in "
        f"use; the Raft port is this voter's controller.quorum.voters port {controller} + "
        f"raftka.raft.port.offset {RAFT_PORT_OFFSET}: free it or change "
        "raftka.raft.port.offset"]


@pytest.mark.slow
def test_a_broker_whose_client_port_is_taken_never_registers(start_cluster, tmp_path: Path
                                                             ) -> None:
    """A new broker joining a running cluster binds first: with its port taken it exits
    before the cluster sees it, as a registered broker or as a quorum observer."""
    cluster: QuorumCluster = start_cluster(nodes=1, controllers=1)
    controller, broker = cluster.node(1), cluster.node(2)
    props = dict(broker.properties)
    client, _ = free_port_pair()
    props.update({"node.id": "3", "log.dirs": str(tmp_path / "node-3"),
                  "listeners": f"PLAINTEXT://{HOST}:{client}",
                  "advertised.listeners": f"PLAINTEXT://{HOST}:{client}",
                  "raftka.metrics.listener": f"http://{HOST}:{client + METRICS_PORT_SHIFT}"})
    config = tmp_path / "node-3.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    formatted = raftka("storage", "format", "-t", cluster.info.cluster_id, "-c", str(config))
    assert formatted.returncode == 0, formatted.stderr
    with socket.socket() as taken:
        taken.bind((HOST, client))
        taken.listen()
        result = raftka("server", "start", str(config))
    assert result.returncode == 1
    controller_log = cluster.log_text(controller.node_id)
    assert "broker 3 registering" not in controller_log
    status = quorum_status_cli(cluster.client_port(broker.node_id))
    assert status is not None and 3 not in status["current_observers"]
    assert error_lines(result) == [
        f"raftka server: cannot listen on PLAINTEXT://{HOST}:{client} (Address already in "
        "use); change the port in listeners or stop the process that holds it"]
    # The same node starts once its port is free, and only then joins.
    process = subprocess.Popen([sys.executable, "-m", "broker.cli.main", "server", "start",
                                str(config)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, cwd=REPO_ROOT)
    try:
        wait_for(lambda: "broker 3 registering" in cluster.log_text(controller.node_id), 30,
                 "broker 3 to register once its port is free", details=cluster.logs)
    finally:
        process.kill()
        process.wait(10)


# --- index files after kill -9 -------------------------------------------------------------

@pytest.mark.slow
def test_indexes_stay_sparse_after_kill_and_restart(start_cluster) -> None:
    """Issue 21: after kill -9 and a restart, every index file used to take its preallocated
    10 MiB on disk (20 MiB per partition). Their size may stay preallocated; their blocks
    must not."""
    cluster: QuorumCluster = start_cluster(nodes=1)
    port = cluster.client_port(1)
    create_topics(port, {"sparse": (4, 1)})
    produce(f"{HOST}:{port}", "sparse", [b"x" * 200] * 2000, partitions=4)
    data = Path(cluster.node(1).properties["log.dirs"].split(",")[0])
    for _ in range(2):
        cluster.kill(1)
        cluster.restart(1)
        wait_for(lambda: _partition_dirs(data, "sparse") == 4, 30, "the partitions to load")
        indexes = [p for p in data.glob("sparse-*/*") if p.suffix in (".index", ".timeindex")]
        assert len(indexes) == 8
        allocated = {str(p.relative_to(data)): p.stat().st_blocks * 512 for p in indexes}
        assert sum(allocated.values()) <= 512 * 1024, allocated
    logs = [p for p in data.glob("sparse-*/*.log")]
    data_bytes = sum(p.stat().st_size for p in logs)
    on_disk = sum(p.stat().st_blocks * 512 for p in data.glob("sparse-*/*"))
    assert on_disk <= data_bytes + 1024 * 1024, (on_disk, data_bytes)

    def log_end_offsets() -> list[int] | None:
        response = send(port, ApiKey.LIST_OFFSETS, {
            "replica_id": -1, "isolation_level": 0, "topics": [{"name": "sparse", "partitions": [
                {"partition_index": p, "timestamp": -1} for p in range(4)]}]})
        if response is None:
            return None
        parts = response["topics"][0]["partitions"]
        return None if any(p["error_code"] for p in parts) else [p["offset"] for p in parts]

    ends = wait_for(log_end_offsets, 30, "every partition's log end offset")
    assert sum(ends) == 2000


def _partition_dirs(data: Path, topic: str) -> int:
    return len([p for p in data.glob(f"{topic}-*") if p.is_dir()])
