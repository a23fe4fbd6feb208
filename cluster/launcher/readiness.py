"""Is a node ready? Checks the launcher polls, one blocking request at a time.

`kraft_ready` is the real check (Metadata v12 lists every broker and a controller; a
controller-only node's DescribeQuorum has a leader). `listening_ready` only asks ApiVersions,
for nodes that do not run the quorum yet."""

from __future__ import annotations

import socket
import time
from typing import Any, Callable

from cluster.launcher.layout import ClusterInfo, NodeInfo
from metadata.topic_names import METADATA_TOPIC

# ready(cluster, node) -> bool; polled until True or the deadline.
ReadinessCheck = Callable[[ClusterInfo, NodeInfo], bool]

API_VERSIONS, METADATA, DESCRIBE_QUORUM = 18, 3, 55
# Longest one probe may take, all steps together: the launcher's deadline is checked between
# probes, so this bounds how far a probe can overshoot it.
PROBE_TIMEOUT = 2.0


def _open(node: NodeInfo, listener: str, port: int, timeout: float) -> socket.socket:
    """A connection to the node's `listener`, over TLS when the node's config says so."""
    from broker.config.tls import listener_client_security
    from clients.net.security import open_blocking_socket

    security = listener_client_security(node.properties, listener)
    return open_blocking_socket(node.host, port, security, timeout)


def _round_trip(node: NodeInfo, listener: str, port: int, api_key: int, api_version: int,
                body: dict, timeout: float = PROBE_TIMEOUT) -> Any:
    """One request on a fresh connection: the decoded body (a dict, or the API's message
    class); None when the node does not answer properly within `timeout` seconds overall."""
    from clients.protocol import ProtocolError, decode_response, encode_request

    frame = encode_request(api_key, api_version, 1, "raftka-launcher", body)
    deadline = time.monotonic() + timeout
    try:
        with _open(node, listener, port, timeout) as sock:
            sock.sendall(len(frame).to_bytes(4, "big") + frame)
            size = int.from_bytes(_receive(sock, 4, deadline), "big")
            correlation_id, response = decode_response(api_key, api_version,
                                                       _receive(sock, size, deadline))
    except (OSError, EOFError, ProtocolError):
        return None
    return response if correlation_id == 1 else None


def _receive(sock: socket.socket, size: int, deadline: float) -> bytes:
    from clients.net.blocking_connection import recv_by

    data = bytearray()
    while len(data) < size:
        chunk = recv_by(sock, size - len(data), deadline)
        if not chunk:
            raise EOFError("connection closed")
        data += chunk
    return bytes(data)


def listening_ready(cluster: ClusterInfo, node: NodeInfo) -> bool:
    """The node answers ApiVersions on its first listener."""
    listener = "PLAINTEXT" if node.client_port is not None else "CONTROLLER"
    port = node.client_port if node.client_port is not None else node.controller_port
    assert port is not None
    response = _round_trip(node, listener, port, API_VERSIONS, 0, {})
    return response is not None and response.error_code == 0


def metadata_lists_brokers(cluster: ClusterInfo, node: NodeInfo) -> bool:
    """Metadata v12 on the broker lists every expected broker (registered, unfenced) and an
    active controller."""
    assert node.client_port is not None
    response = _round_trip(node, "PLAINTEXT", node.client_port, METADATA, 12, {
        "topics": [], "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})
    if response is None or response.get("controller_id", -1) == -1:
        return False
    listed = {broker["node_id"] for broker in response.get("brokers", [])}
    return {b.node_id for b in cluster.brokers} <= listed


def quorum_has_leader(cluster: ClusterInfo, node: NodeInfo) -> bool:
    """DescribeQuorum on the controller listener reports a leader and this node as a voter."""
    assert node.controller_port is not None
    response = _round_trip(node, "CONTROLLER", node.controller_port, DESCRIBE_QUORUM, 0, {
        "topics": [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]})
    if response is None or response.get("error_code", 0) != 0:
        return False
    for topic in response.get("topics", []):
        for partition in topic.get("partitions", []):
            voters = {v["replica_id"] for v in partition.get("current_voters", [])}
            if (partition.get("error_code", 0) == 0 and partition.get("leader_id", -1) >= 0
                    and node.node_id in voters):
                return True
    return False


def kraft_ready(cluster: ClusterInfo, node: NodeInfo) -> bool:
    if node.is_broker:
        return metadata_lists_brokers(cluster, node)
    return quorum_has_leader(cluster, node)


READINESS_CHECKS: dict[str, ReadinessCheck] = {
    "kraft": kraft_ready,
    "listening": listening_ready,
}
