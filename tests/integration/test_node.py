"""The real node process: clusters started through the launcher, as scripts/bootstrap-quorum
starts them, answering Kafka clients on their broker listeners."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
import trio

from broker.apis.admin import ForwardingHandlers
from broker.apis.request import ConnectionContext, RequestContext
from broker.controller_client import ControllerClient
from cluster.launcher import ClusterInfo, stop_quorum
from cluster.launcher.ports import bootstrap_on_free_ports
from cluster.launcher.processes import exit_code, log_tail, read_pid
from broker.metadata_bridge import MetadataBridge
from clients.net import BlockingKafkaConnection, KafkaConnectionError
from clients.protocol import ApiKey, ErrorCode, decode_request, encode_request, encode_response
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage
from tests.conftest import REPO_ROOT
from cluster.testing.waiting import wait_for

HOST = "127.0.0.1"
# Quicker heartbeats and sessions: a node stopping after the quorum lost its majority waits
# one session for a controller before it gives up on controlled shutdown.
FAST_LIFECYCLE = {"broker.heartbeat.interval.ms": "500", "broker.session.timeout.ms": "3000"}


def start_cluster(cluster_dir: Path, **kwargs: Any) -> ClusterInfo:
    """bootstrap_quorum on free ports of the test range, picking again when one is taken."""
    return bootstrap_on_free_ports(cluster_dir, timeout=45, **kwargs)


def stop_cluster(cluster: ClusterInfo) -> None:
    """Brokers first, then controllers (Kafka's order: brokers still reach a controller for
    their controlled shutdown); SIGKILL whatever a graceful stop leaves behind."""
    order = sorted(cluster.nodes, key=lambda n: (n.is_controller, n.node_id))
    try:
        for node in order:
            stop_quorum(cluster.dir, node_id=node.node_id, timeout=30)
    finally:
        stop_quorum(cluster.dir, kill=True)


def request(port: int, api_key: int, body: dict[str, Any], version: int | None = None
            ) -> dict[str, Any] | None:
    try:
        with BlockingKafkaConnection(HOST, port, client_id="node-tests", timeout=10) as conn:
            return conn.request(api_key, body, version=version)
    except (KafkaConnectionError, OSError):
        return None


def metadata(port: int, topics: list[str] | None = None) -> dict[str, Any]:
    # No auto-creation (on by default in Kafka): asking about a missing topic must not make it.
    body = {"topics": None if topics is None else [{"name": name} for name in topics],
            "allow_auto_topic_creation": False}
    response = request(port, ApiKey.METADATA, body)
    assert response is not None, f"no Metadata answer from port {port}"
    return response


def topic_entry(response: dict[str, Any], name: str) -> dict[str, Any] | None:
    for topic in response["topics"]:
        if topic["name"] == name and topic["error_code"] == ErrorCode.NONE:
            return topic
    return None


def create_topic(port: int, name: str, partitions: int, replication: int) -> dict[str, Any]:
    response = request(port, ApiKey.CREATE_TOPICS, {
        "topics": [{"name": name, "num_partitions": partitions,
                    "replication_factor": replication}],
        "timeout_ms": 10000})
    assert response is not None
    return response["topics"][0]


def quorum_describe(port: int, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "broker.cli.main", "quorum", "describe", "--bootstrap-server",
         f"{HOST}:{port}", *flags], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)


@pytest.fixture(scope="module")
def three_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterInfo]:
    cluster = start_cluster(tmp_path_factory.mktemp("three-nodes"), nodes=3,
                            overrides=FAST_LIFECYCLE)
    try:
        yield cluster
    finally:
        stop_cluster(cluster)


@pytest.mark.slow
def test_single_combined_node_serves_metadata_forwards_admin_and_stops_on_sigterm(
        tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, nodes=1)
    node = cluster.nodes[0]
    port = node.client_port
    assert port is not None
    try:
        response = metadata(port)
        assert [(b["node_id"], b["host"], b["port"]) for b in response["brokers"]] == [
            (1, HOST, port)]
        assert response["cluster_id"] == cluster.cluster_id
        assert response["controller_id"] == 1

        created = create_topic(port, "orders", partitions=3, replication=1)
        assert created["error_code"] == ErrorCode.NONE
        assert created["num_partitions"] == 3
        topic = wait_for(lambda: topic_entry(metadata(port, ["orders"]), "orders"),
                         "orders in Metadata")
        assert topic["topic_id"] == created["topic_id"]
        assert sorted(p["partition_index"] for p in topic["partitions"]) == [0, 1, 2]
        assert all(p["leader_id"] == 1 and p["isr_nodes"] == [1] for p in topic["partitions"])
        missing = metadata(port, ["no-such-topic"])["topics"][0]
        assert missing["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

        # DeleteTopics v4 names topics in topic_names; the controller speaks v6.
        deleted = request(port, ApiKey.DELETE_TOPICS,
                          {"topic_names": ["orders"], "timeout_ms": 10000}, version=4)
        assert deleted is not None
        assert [(r["name"], r["error_code"]) for r in deleted["responses"]] == [
            ("orders", ErrorCode.NONE)]
        wait_for(lambda: topic_entry(metadata(port), "orders") is None, "orders to go")

        cluster_info = request(port, ApiKey.DESCRIBE_CLUSTER, {})
        assert cluster_info is not None
        assert cluster_info["error_code"] == ErrorCode.NONE
        assert cluster_info["cluster_id"] == cluster.cluster_id
        assert cluster_info["controller_id"] == 1
        assert [(b["broker_id"], b["port"]) for b in cluster_info["brokers"]] == [(1, port)]

        described = quorum_describe(port, "--status")
        assert described.returncode == 0, described.stderr
        assert "LeaderId:" in described.stdout
        leader_line = next(line for line in described.stdout.splitlines()
                           if line.startswith("LeaderId:"))
        assert leader_line.split()[1] == "1"

        # DescribeQuorum is forwarded; the controller's v2 answer is relayed as v0.
        quorum = request(port, ApiKey.DESCRIBE_QUORUM, {"topics": [{
            "topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]},
            version=0)
        assert quorum is not None and quorum["error_code"] == ErrorCode.NONE
        partition = quorum["topics"][0]["partitions"][0]
        assert partition["leader_id"] == 1
        assert [v["replica_id"] for v in partition["current_voters"]] == [1]

        pid = read_pid(node)
        assert pid is not None
        os.kill(pid, signal.SIGTERM)
        code = wait_for(lambda: exit_code(pid) is not None and [exit_code(pid)],
                        "the node to exit after SIGTERM", timeout=40)
        assert code == [0], log_tail(node)
        log = node.log_path.read_text()
        assert "controlled shutdown complete" in log
        assert "node 1 stopped" in log
    finally:
        stop_cluster(cluster)


@pytest.mark.slow
def test_three_combined_nodes_each_list_all_brokers_and_a_replicated_topic(
        three_nodes: ClusterInfo) -> None:
    ports = [n.client_port for n in three_nodes.nodes]
    for port in ports:
        assert port is not None
        assert sorted(b["node_id"] for b in metadata(port)["brokers"]) == [1, 2, 3]
    created = create_topic(ports[1], "replicated", partitions=2, replication=3)  # type: ignore[arg-type]
    assert created["error_code"] == ErrorCode.NONE
    for port in ports:
        def fully_replicated() -> dict[str, Any] | None:
            topic = topic_entry(metadata(port, ["replicated"]), "replicated")  # type: ignore[arg-type]
            if topic is None or len(topic["partitions"]) != 2:
                return None
            if all(sorted(p["replica_nodes"]) == [1, 2, 3] and sorted(p["isr_nodes"]) == [1, 2, 3]
                   and p["leader_id"] in (1, 2, 3) for p in topic["partitions"]):
                return topic
            return None

        topic = wait_for(fully_replicated, f"the RF 3 topic on port {port}")
        assert topic["topic_id"] == created["topic_id"]


@pytest.mark.slow
def test_confluent_admin_client_creates_lists_and_describes(three_nodes: ClusterInfo) -> None:
    admin_module = pytest.importorskip("confluent_kafka.admin")
    admin = admin_module.AdminClient({"bootstrap.servers": three_nodes.bootstrap_servers})
    futures = admin.create_topics([admin_module.NewTopic("from-librdkafka", num_partitions=4,
                                                         replication_factor=2)],
                                  operation_timeout=10)
    futures["from-librdkafka"].result(timeout=20)

    def listed() -> Any:
        topics = admin.list_topics(timeout=10)
        topic = topics.topics.get("from-librdkafka")
        return topics if topic is not None and len(topic.partitions) == 4 else None

    listing = wait_for(listed, "librdkafka to list the new topic")
    assert sorted(listing.brokers) == [1, 2, 3]
    assert listing.cluster_id == three_nodes.cluster_id
    assert listing.controller_id in (1, 2, 3)
    description = admin.describe_cluster().result(timeout=20)
    assert description.cluster_id == three_nodes.cluster_id
    assert sorted(node.id for node in description.nodes) == [1, 2, 3]
    assert description.controller.id in (1, 2, 3)


@pytest.mark.slow
def test_broker_only_observers_register_and_show_in_quorum_describe(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, nodes=2, controllers=3, overrides=FAST_LIFECYCLE)
    try:
        brokers = cluster.brokers
        assert [b.node_id for b in brokers] == [4, 5]
        for broker in brokers:
            assert broker.client_port is not None
            listed = metadata(broker.client_port)
            assert sorted(b["node_id"] for b in listed["brokers"]) == [4, 5]
            assert listed["controller_id"] in (4, 5)  # a live broker, as Kafka's KRaft answers

        def observers() -> list[int] | None:
            result = quorum_describe(brokers[0].client_port, "--status", "--json")  # type: ignore[arg-type]
            if result.returncode != 0:
                return None
            status = json.loads(result.stdout)
            return status if sorted(status["current_observers"]) == [4, 5] else None

        status = wait_for(observers, "both brokers as quorum observers")
        assert sorted(status["current_voters"]) == [1, 2, 3]
        created = create_topic(brokers[1].client_port, "on-observers", partitions=1,  # type: ignore[arg-type]
                               replication=2)
        assert created["error_code"] == ErrorCode.NONE
        wait_for(lambda: topic_entry(metadata(brokers[0].client_port, ["on-observers"]),  # type: ignore[arg-type]
                                     "on-observers"), "the topic on the other observer")
    finally:
        stop_cluster(cluster)


async def test_metadata_bridge_delivers_updates_from_another_thread_in_order() -> None:
    bridge = MetadataBridge()
    seen: list[int] = []

    class Recorder:
        async def on_metadata(self, delta: MetadataDelta, image: MetadataImage) -> None:
            await trio.sleep(0)  # a publisher that yields must not reorder deliveries
            seen.append(image.offset)

    bridge.add_publisher(Recorder())
    images = [dataclasses.replace(MetadataImage.empty(), offset=i) for i in range(1, 301)]
    # The journal replays before the trio side runs: those updates wait in the queue.
    bridge.on_metadata_update(MetadataDelta(images[0]), images[0])

    def apply_on_raft_thread() -> None:
        for image in images[1:]:
            bridge.on_metadata_update(MetadataDelta(image), image)

    async with trio.open_nursery() as nursery:
        await nursery.start(bridge.run)
        await trio.to_thread.run_sync(apply_on_raft_thread)
        with trio.fail_after(10):
            latest = await bridge.wait_for(lambda image: image.offset == 300)
        nursery.cancel_scope.cancel()
    assert latest.offset == bridge.image.offset == 300
    assert seen == list(range(1, 301))


async def test_forwarded_create_topics_times_out_per_topic_without_a_controller() -> None:
    with socket.socket() as unused:
        unused.bind((HOST, 0))
        port = unused.getsockname()[1]  # nothing listens here once closed
    channel = ControllerClient({1: (HOST, port)}, "node-tests")
    handlers = ForwardingHandlers(channel, min_timeout_ms=300)
    frame = encode_request(ApiKey.CREATE_TOPICS, 4, 7, "client", {
        "topics": [{"name": "a", "num_partitions": 1, "replication_factor": 1},
                   {"name": "b", "num_partitions": 1, "replication_factor": 1}],
        "timeout_ms": 100})
    request = decode_request(frame)
    ctx = RequestContext.of(ConnectionContext(1, "PLAINTEXT", "PLAINTEXT", (HOST, 50000)),
                            request)
    with trio.fail_after(10):
        body = await handlers.forward(request, ctx)
    await channel.aclose()
    assert [(t.name, t.error_code) for t in body.topics] == [
        ("a", ErrorCode.REQUEST_TIMED_OUT), ("b", ErrorCode.REQUEST_TIMED_OUT)]
    assert encode_response(ApiKey.CREATE_TOPICS, 4, 7, body)  # valid at the client's version
