"""Shared helpers for the quorum failure tests: a real-process cluster fixture, waiting on
conditions with deadlines, and small blocking request helpers.

Every request opens a fresh connection and returns None when the node cannot be reached, so a
probe can be polled across kills and restarts without bookkeeping.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, TypeVar

import pytest

from cluster.launcher import (
    ClusterInfo,
    LauncherError,
    NodeInfo,
    kraft_ready,
    start_node,
    stop_quorum,
)
from cluster.launcher.ports import bootstrap_on_free_ports
from cluster.launcher.processes import is_running, log_tail, read_pid
from cluster.testing.waiting import wait_for as poll_until
from clients.net import BlockingKafkaConnection, KafkaConnectionError
from clients.protocol import ApiKey, KafkaError
from clients.protocol.errors import ErrorCode
from tests.unit.broker.log.helpers import batch

T = TypeVar("T")

HOST = "127.0.0.1"
METADATA_TOPIC = "__cluster_metadata"
CLIENT_ID = "raftka-quorum-tests"
REQUEST_TIMEOUT_S = 3.0
NO_LEADER = -1
TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC
SET_CONFIG = 0  # AlterConfigOp.OpType.SET
DEBUG_REPLICA_ID = -2  # ListOffsets "latest" from a non-consumer is the log end offset

# Short sessions and heartbeats keep fencing tests fast; everything else stays Kafka's default.
FAST_OVERRIDES: dict[str, str] = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
}
# confluent-kafka consumer settings of the consumer-group tests: short sessions, fast
# heartbeats, reading from the start, committing only when a test asks.
CONSUMER = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 200,
            "auto.offset.reset": "earliest", "enable.auto.commit": False}


# --- waiting -------------------------------------------------------------------------------

def wait_for(probe: Callable[[], T | None], timeout: float, what: str,
             interval: float = 0.05, details: Callable[[], str] | None = None) -> T:
    """`cluster.testing.waiting.wait_for`, failing the test with the output of `details`
    (e.g. log tails) appended."""
    try:
        return poll_until(probe, what, timeout, interval)
    except TimeoutError as exc:
        extra = f"\n{details()}" if details is not None else ""
        pytest.fail(f"{exc}{extra}")


# --- requests ------------------------------------------------------------------------------

def send(port: int, api_key: int, body: dict[str, Any], version: int | None = None,
         timeout: float = REQUEST_TIMEOUT_S) -> dict[str, Any] | None:
    """One request on a fresh connection; None when the node is unreachable or silent."""
    try:
        with BlockingKafkaConnection(HOST, port, client_id=CLIENT_ID, timeout=timeout) as conn:
            return conn.request(api_key, body, version)
    except (KafkaConnectionError, OSError, KafkaError):
        return None


def metadata(port: int, timeout: float = REQUEST_TIMEOUT_S) -> dict[str, Any] | None:
    """Metadata for every topic, at the newest version both sides speak."""
    return send(port, ApiKey.METADATA, {
        "topics": None, "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False}, timeout=timeout)


@dataclass(frozen=True)
class PartitionView:
    """One partition as a Metadata response shows it."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


def partition_views(response: Mapping[str, Any]) -> dict[tuple[str, int], PartitionView]:
    """(topic, partition) -> PartitionView for every error-free topic in a Metadata response."""
    views = {}
    for topic in response.get("topics", []):
        if topic["error_code"] != 0:
            continue
        for part in topic["partitions"]:
            views[(topic["name"], part["partition_index"])] = PartitionView(
                topic["name"], part["partition_index"], part["leader_id"],
                part.get("leader_epoch", -1), tuple(part["replica_nodes"]),
                tuple(part["isr_nodes"]))
    return views


def topic_ids(response: Mapping[str, Any]) -> dict[str, uuid.UUID]:
    return {t["name"]: t.get("topic_id") for t in response.get("topics", [])
            if t["error_code"] == 0}


def partition_counts(response: Mapping[str, Any]) -> dict[str, int]:
    return {t["name"]: len(t["partitions"]) for t in response.get("topics", [])
            if t["error_code"] == 0}


def listed_brokers(response: Mapping[str, Any]) -> set[int]:
    return {broker["node_id"] for broker in response.get("brokers", [])}


def describe_quorum(port: int, timeout: float = REQUEST_TIMEOUT_S) -> dict[str, Any] | None:
    """The `__cluster_metadata-0` entry of an error-free DescribeQuorum answer, else None."""
    response = send(port, ApiKey.DESCRIBE_QUORUM, {"topics": [{
        "topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]},
        timeout=timeout)
    if response is None or response.get("error_code", 0) != 0:
        return None
    for topic in response.get("topics", []):
        for part in topic.get("partitions", []):
            if part.get("error_code", 0) == 0 and part.get("partition_index") == 0:
                return part
    return None


def quorum_status_cli(port: int) -> dict[str, Any] | None:
    """`raftka quorum describe --status --json` against one broker; None if it fails."""
    raftka = Path(sys.executable).parent / "raftka"
    result = subprocess.run(
        [str(raftka), "quorum", "describe", "--bootstrap-server", f"{HOST}:{port}",
         "--status", "--json", "--timeout-ms", "5000"], capture_output=True, text=True,
        timeout=60)
    if result.returncode != 0:
        return None
    status: dict[str, Any] = json.loads(result.stdout)
    return status


def create_topics(port: int, topics: Mapping[str, tuple[int, int]],
                  timeout: float = 20.0, configs: Mapping[str, str] | None = None) -> None:
    """CreateTopics {name: (partitions, replication factor)}, retrying what Kafka's admin
    client retries (unreachable node, retriable errors) until `timeout`. A topic that turns
    out to exist on a retry was created by an earlier attempt whose answer was lost."""
    pending = dict(topics)
    attempts = 0
    deadline = time.monotonic() + timeout
    last: object = None
    while pending:
        attempts += 1
        response = send(port, ApiKey.CREATE_TOPICS, {
            "topics": [{"name": name, "num_partitions": parts, "replication_factor": rf,
                        "assignments": [],
                        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}
                       for name, (parts, rf) in pending.items()],
            "timeout_ms": 10_000, "validate_only": False}, timeout=15.0)
        last = response
        for result in (response or {}).get("topics", []):
            code = ErrorCode(result["error_code"])
            if code == ErrorCode.NONE or (code == ErrorCode.TOPIC_ALREADY_EXISTS
                                          and attempts > 1):
                pending.pop(result["name"], None)
            elif not code.retriable:
                pytest.fail(f"CreateTopics {result['name']} on port {port}: {code.name} "
                            f"{result.get('error_message')}")
        if pending and time.monotonic() >= deadline:
            pytest.fail(f"CreateTopics {sorted(pending)} on port {port} did not succeed in "
                        f"{timeout:g} s; last answer {last!r}")
        if pending:
            time.sleep(0.1)


def produce(servers: str, topic: str, values: list[bytes], partitions: int) -> None:
    """Produce `values` with confluent-kafka (acks=all), round-robin over `partitions`."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": servers, "acks": "all"})
    for i, value in enumerate(values):
        producer.produce(topic, value=value, partition=i % partitions)
    assert producer.flush(60) == 0


def produce_record(port: int, topic: str, value: bytes, acks: int = -1,
                   timeout_ms: int = 5_000) -> dict[str, Any] | None:
    """One single-record Produce to partition 0; its partition response, None if unreachable."""
    response = send(port, ApiKey.PRODUCE, {
        "transactional_id": None, "acks": acks, "timeout_ms": timeout_ms,
        "topic_data": [{"name": topic, "partition_data": [
            {"index": 0, "records": bytes(batch([value]))}]}]}, timeout=timeout_ms / 1000 + 5)
    if response is None:
        return None
    entry: dict[str, Any] = response["responses"][0]["partition_responses"][0]
    return entry


def log_end_offset(port: int, topic: str) -> int | None:
    """Partition 0's log end offset on the leader at `port`; None if it cannot answer."""
    response = send(port, ApiKey.LIST_OFFSETS, {
        "replica_id": DEBUG_REPLICA_ID, "isolation_level": 0, "topics": [{
            "name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
    if response is None:
        return None
    entry = response["topics"][0]["partitions"][0]
    return int(entry["offset"]) if entry["error_code"] == 0 else None


def alter_topic_config(port: int, topic: str, name: str, value: str) -> int | None:
    """IncrementalAlterConfigs SET one topic config; the error code, None if unreachable."""
    response = send(port, ApiKey.INCREMENTAL_ALTER_CONFIGS, {"resources": [{
        "resource_type": TOPIC_RESOURCE, "resource_name": topic,
        "configs": [{"name": name, "config_operation": SET_CONFIG, "value": value}]}],
        "validate_only": False}, timeout=15.0)
    if response is None:
        return None
    return int(response["responses"][0]["error_code"])


# --- the cluster ---------------------------------------------------------------------------

class QuorumCluster:
    """A cluster of real node processes started by the launcher, with test conveniences."""

    def __init__(self, info: ClusterInfo) -> None:
        self.info = info
        self.dir = info.dir

    @property
    def nodes(self) -> list[NodeInfo]:
        return self.info.nodes

    @property
    def broker_ids(self) -> list[int]:
        return [node.node_id for node in self.info.brokers]

    @property
    def controller_ids(self) -> list[int]:
        return [node.node_id for node in self.info.nodes if node.is_controller]

    def node(self, node_id: int) -> NodeInfo:
        return self.info.node(node_id)

    def client_port(self, node_id: int) -> int:
        port = self.node(node_id).client_port
        assert port is not None, f"node {node_id} has no broker listener"
        return port

    def pid(self, node_id: int) -> int | None:
        node = self.node(node_id)
        pid = read_pid(node)
        return pid if pid is not None and is_running(pid, node) else None

    def is_running(self, node_id: int) -> bool:
        return self.pid(node_id) is not None

    def kill(self, node_id: int) -> None:
        """SIGKILL one node (as `stop-quorum --kill --node`)."""
        assert stop_quorum(self.dir, node_id=node_id, kill=True) == [node_id]

    def terminate(self, node_id: int | None = None, timeout: float = 30.0) -> list[int]:
        """SIGTERM one node or all, waiting for each to exit."""
        return stop_quorum(self.dir, node_id=node_id, timeout=timeout)

    def restart(self, node_id: int, timeout: float = 45.0) -> None:
        start_node(self.dir, node_id, timeout=timeout)

    def send_signal(self, node_id: int, signum: signal.Signals) -> None:
        pid = self.pid(node_id)
        assert pid is not None, f"node {node_id} is not running"
        os.kill(pid, signum)

    def metadata_dir(self, node_id: int) -> Path:
        """Where the node's Raft journal and snapshot live (metadata.log.dir or the first
        log dir, then `__cluster_metadata-0`)."""
        props = self.node(node_id).properties
        base = props.get("metadata.log.dir") or props["log.dirs"].split(",")[0]
        return Path(base) / f"{METADATA_TOPIC}-0"

    def log_text(self, node_id: int) -> str:
        try:
            return self.node(node_id).log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def logs(self, lines: int = 25) -> str:
        """The tail of every node's server.log, for failure messages."""
        return "\n".join(f"--- node {node.node_id} server.log ---\n{log_tail(node, lines)}"
                         for node in self.nodes)

    def quorum_leaders(self, node_ids: list[int] | None = None) -> dict[int, int]:
        """node id -> the leader its DescribeQuorum names, for each of `node_ids` (default:
        all) that answers with a leader: a voter's own CONTROLLER listener is asked first,
        then the broker listener (which a broker-only node forwards)."""
        leaders = {}
        for node_id in node_ids if node_ids is not None else [n.node_id for n in self.nodes]:
            node = self.node(node_id)
            for port in (node.controller_port, node.client_port):
                if port is None:
                    continue
                part = describe_quorum(port, timeout=1.0)
                if part is not None and part.get("leader_id", NO_LEADER) >= 0:
                    leaders[node_id] = int(part["leader_id"])
                    break
        return leaders

    def quorum_leader(self, node_ids: list[int] | None = None) -> int | None:
        """The leader named by the first of `node_ids` that answers DescribeQuorum."""
        leaders = self.quorum_leaders(node_ids)
        return next(iter(leaders.values()), None)

    def describe_quorum_on_leader(self) -> dict[str, Any] | None:
        """DescribeQuorum's partition entry as the current leader itself reports it."""
        leader = self.quorum_leader([n for n in self.controller_ids if self.is_running(n)])
        if leader is None:
            return None
        port = self.node(leader).controller_port
        return None if port is None else describe_quorum(port, timeout=1.0)

    def start_nodes(self, node_ids: list[int], timeout: float = 45.0) -> None:
        """Start several stopped nodes at once, then wait until each is kraft-ready; a lone
        voter cannot become ready before a majority runs, so they must start together."""
        for node_id in node_ids:
            start_node(self.dir, node_id, ready=_started, timeout=timeout)
        waiting = [self.node(node_id) for node_id in node_ids]
        wait_for(lambda: all(kraft_ready(self.info, node) for node in waiting), timeout,
                 f"nodes {node_ids} to be ready after start", interval=0.1, details=self.logs)

    def metadata_from(self, node_id: int) -> dict[str, Any] | None:
        return metadata(self.client_port(node_id))

    def kill_all(self) -> None:
        stop_quorum(self.dir, kill=True, timeout=10.0)


def _started(cluster: ClusterInfo, node: NodeInfo) -> bool:
    """Readiness check that only requires the process to have been spawned."""
    return True


@pytest.fixture
def start_cluster(tmp_path: Path) -> Iterator[Callable[..., QuorumCluster]]:
    """Factory: start_cluster(nodes=3, controllers=0, overrides=None) bootstraps a cluster
    with the launcher (the path of scripts/bootstrap-quorum) on free ports of the test range
    and waits until it is kraft-ready. Every cluster is SIGKILLed at teardown, whatever the outcome: a test
    that wants a graceful stop does it itself, and killing keeps teardown fast."""
    started: list[QuorumCluster] = []

    def start(nodes: int = 3, controllers: int = 0,
              overrides: Mapping[str, str] | None = None, timeout: float = 45.0
              ) -> QuorumCluster:
        settings = {**FAST_OVERRIDES, **(overrides or {})}
        info = bootstrap_on_free_ports(tmp_path / f"cluster-{len(started)}", nodes,
                                       controllers, settings, timeout=timeout)
        cluster = QuorumCluster(info)
        started.append(cluster)
        return cluster

    yield start
    for cluster in started:
        try:
            cluster.kill_all()
        except LauncherError:
            pass  # nothing of it left to stop

