"""The broker's network rules on a real cluster from the launcher: UNSUPPORTED_VERSION and the
ApiVersions v0 fallback, garbage and oversized frames closing only their own connection,
`connections.max.idle.ms`, `max.connections` (held back, as in Kafka), and `auto.create.topics.enable=false`."""

from __future__ import annotations

import os
import re
import select
import socket
import struct
import time
from typing import Iterator

import pytest

from clients.protocol import ApiKey, decode_response, encode_request
from clients.protocol.errors import ErrorCode
from tests.compat.cluster import HOST, Cluster, running_cluster, wait_for
from tests.conftest import REPO_ROOT

IDLE_MS = 3000
MAX_CONNECTIONS = 12


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    overrides = {"connections.max.idle.ms": str(IDLE_MS),
                 "max.connections": str(MAX_CONNECTIONS),
                 "auto.create.topics.enable": "false"}
    with running_cluster(tmp_path_factory.mktemp("broker-network"), overrides=overrides) as started:
        yield started


def connect(port: int) -> socket.socket:
    return socket.create_connection((HOST, port), timeout=10)


def send_frame(sock: socket.socket, frame: bytes) -> None:
    sock.sendall(struct.pack(">i", len(frame)) + frame)


def raw_header(api_key: int, version: int, correlation_id: int) -> bytes:
    """A v1 request header (non-flexible): enough for any version the codec lacks."""
    client_id = b"raw"
    return struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id


def read_frame(sock: socket.socket) -> bytes | None:
    """The next response frame, or None when the broker closed the connection."""
    header = _read(sock, 4)
    if header is None:
        return None
    return _read(sock, struct.unpack(">i", header)[0])


def _read(sock: socket.socket, size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        try:
            chunk = sock.recv(size - len(data))
        except ConnectionResetError:
            return None
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def api_versions_round_trip(sock: socket.socket, correlation_id: int = 1) -> int:
    send_frame(sock, encode_request(ApiKey.API_VERSIONS, 0, correlation_id, "t", {}))
    frame = read_frame(sock)
    assert frame is not None, "the broker closed a healthy connection"
    answered, body = decode_response(ApiKey.API_VERSIONS, 0, frame)
    assert answered == correlation_id and body.error_code == 0
    return answered


def is_closed_by_broker(sock: socket.socket, timeout: float = 10.0) -> bool:
    readable, _, _ = select.select([sock], [], [], timeout)
    if not readable:
        return False
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_unsupported_version_gets_unsupported_version(cluster: Cluster) -> None:
    with connect(cluster.port) as sock:
        send_frame(sock, raw_header(ApiKey.DESCRIBE_CLUSTER, 99, 5) + b"\x00" * 8)
        frame = read_frame(sock)
        assert frame is not None
        correlation_id, body = decode_response(ApiKey.DESCRIBE_CLUSTER, 1, frame)
        assert (correlation_id, body["error_code"]) == (5, ErrorCode.UNSUPPORTED_VERSION)
        api_versions_round_trip(sock, 6)  # the connection keeps serving


def test_api_versions_too_new_answers_v0_for_fallback(cluster: Cluster) -> None:
    with connect(cluster.port) as sock:
        send_frame(sock, raw_header(ApiKey.API_VERSIONS, 42, 9) + b"\x00" * 4)
        frame = read_frame(sock)
        assert frame is not None
        correlation_id, body = decode_response(ApiKey.API_VERSIONS, 0, frame)
        assert (correlation_id, body.error_code) == (9, ErrorCode.UNSUPPORTED_VERSION)
        versions = {e.api_key: (e.min_version, e.max_version) for e in body.api_keys}
        assert versions[ApiKey.API_VERSIONS] == (0, 3) and ApiKey.PRODUCE in versions
        api_versions_round_trip(sock, 10)


def advertised(port: int) -> dict[int, tuple[int, int]]:
    with connect(port) as sock:
        send_frame(sock, encode_request(ApiKey.API_VERSIONS, 3, 1, "t", {
            "client_software_name": "t", "client_software_version": "1"}))
        frame = read_frame(sock)
        assert frame is not None
        _, body = decode_response(ApiKey.API_VERSIONS, 3, frame)
    assert body.error_code == 0
    return {e.api_key: (e.min_version, e.max_version) for e in body.api_keys}


def test_sasl_is_advertised_on_client_listeners_and_the_readme_table_lists_what_is_served(
        cluster: Cluster) -> None:
    """Client listeners advertise SaslHandshake and SaslAuthenticate (as Kafka's do, SASL or
    not); the CONTROLLER listener does not serve SASL. The Python API page's API table is exactly
    what the client and controller listeners serve."""
    node = cluster.info.node(1)
    assert node.controller_port is not None
    client = advertised(cluster.port_of(1))
    assert client[ApiKey.SASL_HANDSHAKE] == (0, 1)
    assert client[ApiKey.SASL_AUTHENTICATE] == (0, 2)
    controller = advertised(node.controller_port)
    assert ApiKey.SASL_HANDSHAKE not in controller
    served = {**client, **controller}
    page = (REPO_ROOT / "docs" / "python-api.md").read_text()
    section = page[page.index("## Supported Kafka APIs"):]
    table = {int(key): (int(low), int(high)) for key, low, high in re.findall(
        r"^\| [A-Z_]+ \((\d+)\) \| (\d+)-(\d+) \|$", section, re.M)}
    assert table == served


@pytest.mark.parametrize("payload", [
    pytest.param(os.urandom(64), id="random-bytes"),
    pytest.param(raw_header(ApiKey.METADATA, 12, 1)[:5], id="truncated-header"),
    pytest.param(raw_header(ApiKey.PRODUCE, 9, 1) + b"\xff" * 12, id="garbage-body"),
])
def test_garbage_frames_close_only_their_connection(cluster: Cluster, payload: bytes) -> None:
    with connect(cluster.port) as healthy, connect(cluster.port) as hostile:
        api_versions_round_trip(healthy, 1)
        send_frame(hostile, payload)
        assert is_closed_by_broker(hostile), "the broker kept a garbage connection open"
        api_versions_round_trip(healthy, 2)
    with connect(cluster.port) as fresh:
        api_versions_round_trip(fresh)


def test_oversized_frame_closes_the_connection_and_is_logged(cluster: Cluster) -> None:
    with connect(cluster.port_of(1)) as hostile:
        local_port = hostile.getsockname()[1]
        hostile.sendall(struct.pack(">i", 200 * 1024 * 1024) + b"\x00" * 64)  # > 100 MiB
        assert is_closed_by_broker(hostile)
    with connect(cluster.port_of(1)) as fresh:
        api_versions_round_trip(fresh)
    log = cluster.info.node(1).log_path
    wait_for(lambda: f"127.0.0.1:{local_port}" in log.read_text(errors="replace"),
             "the close to be logged with the peer", timeout=5)


def test_idle_connections_close_after_connections_max_idle_ms(cluster: Cluster) -> None:
    with connect(cluster.port) as idle, connect(cluster.port) as busy:
        api_versions_round_trip(idle)
        opened = time.monotonic()
        deadline = opened + IDLE_MS / 1000 * 4
        closed_at = None
        while time.monotonic() < deadline and closed_at is None:
            api_versions_round_trip(busy)  # activity keeps this one open
            if is_closed_by_broker(idle, timeout=0.5):
                closed_at = time.monotonic()
        assert closed_at is not None, "the idle connection was not closed"
        assert closed_at - opened >= IDLE_MS / 1000 * 0.9
        api_versions_round_trip(busy)


def test_max_connections_holds_extra_connections_back(cluster: Cluster) -> None:
    """As in Kafka, connections beyond max.connections wait unaccepted (neither served nor
    closed) and are served once others close."""
    port = cluster.port_of(2)
    opened: list[socket.socket] = []
    try:
        for _ in range(MAX_CONNECTIONS + 5):
            sock = connect(port)
            send_frame(sock, encode_request(ApiKey.API_VERSIONS, 0, 1, "t", {}))
            opened.append(sock)
        # One second for all (connections.max.idle.ms would soon free slots).
        served: list[socket.socket] = []
        deadline = time.monotonic() + 1.0
        while (left := deadline - time.monotonic()) > 0:
            waiting = [sock for sock in opened if sock not in served]
            for sock in select.select(waiting, [], [], left)[0]:
                assert read_frame(sock) is not None, "the broker closed a connection"
                served.append(sock)
        held = [sock for sock in opened if sock not in served]
        assert len(served) <= MAX_CONNECTIONS and len(held) >= 5
        assert not any(is_closed_by_broker(sock, timeout=0) for sock in held)
        for sock in served:
            sock.close()
        for sock in held:
            readable, _, _ = select.select([sock], [], [], 10)
            assert readable and read_frame(sock) is not None, "a held-back connection was not served"
    finally:
        for sock in opened:
            sock.close()


def test_no_auto_creation_when_disabled(cluster: Cluster) -> None:
    topic = cluster.metadata(["never-created"], allow_auto_create=True)["topics"][0]
    assert topic["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert "never-created" not in {t["name"] for t in cluster.metadata(None)["topics"]}
