"""KIP-368 with connections.max.reauth.ms: the session lifetime reaches clients, librdkafka
re-authenticates on its open connections and keeps working, and a connection that does not
re-authenticate is closed at its first request after expiry."""

from __future__ import annotations

import struct
import socket
import time
from typing import Iterator

import pytest

from cluster.testing.waiting import wait_for
from clients.protocol import ApiKey, decode_response, encode_request
from tests.compat.cluster import HOST
from tests.compat.sasl_cluster import SaslCluster, sasl_cluster

confluent_kafka = pytest.importorskip("confluent_kafka")

REAUTH_MS = 2000
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_alice="alice-secret";')
EXPIRED = "SASL session expired"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslCluster]:
    with sasl_cluster(tmp_path_factory.mktemp("reauth"), JAAS,
                      overrides={"connections.max.reauth.ms": str(REAUTH_MS)}) as started:
        yield started


def server_log(cluster: SaslCluster) -> str:
    return cluster.info.node(1).log_path.read_text()


class RawClient:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection((HOST, port), timeout=10)
        self.correlation = 0

    def call(self, api_key: int, version: int, body: dict) -> dict | None:
        self.correlation += 1
        frame = encode_request(api_key, version, self.correlation, "reauth-test", body)
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        header = self._read(4)
        if header is None:
            return None
        answer = self._read(struct.unpack(">i", header)[0])
        return None if answer is None else decode_response(api_key, version, answer)[1]

    def _read(self, size: int) -> bytes | None:
        data = b""
        while len(data) < size:
            try:
                chunk = self.sock.recv(size - len(data))
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            data += chunk
        return data


METADATA = {"topics": [], "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False}


def test_a_connection_that_does_not_reauthenticate_is_closed_after_expiry(
        cluster: SaslCluster) -> None:
    client = RawClient(cluster.sasl_port)
    assert client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})["error_code"] == 0
    auth = client.call(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"\0alice\0alice-secret"})
    assert (auth["error_code"], auth["session_lifetime_ms"]) == (0, REAUTH_MS)
    authenticated_at = time.monotonic()
    assert client.call(ApiKey.METADATA, 12, METADATA) is not None
    wait_for(lambda: time.monotonic() - authenticated_at > REAUTH_MS / 1000 + 0.2,
             "the session to expire", timeout=10)
    assert client.call(ApiKey.METADATA, 12, METADATA) is None
    wait_for(lambda: EXPIRED in server_log(cluster), "the broker to log the expiry")


def test_librdkafka_reauthenticates_and_keeps_consuming(cluster: SaslCluster) -> None:
    cluster.create_topic("reauth")
    before = server_log(cluster).count(EXPIRED)
    config = {"bootstrap.servers": cluster.sasl_bootstrap, "broker.address.family": "v4",
              "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
              "sasl.username": "alice", "sasl.password": "alice-secret"}
    producer = confluent_kafka.Producer({**config, "linger.ms": 0})
    consumer = confluent_kafka.Consumer({**config, "group.id": "reauth",
                                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["reauth"])
    received: list[bytes] = []
    sent = 0
    # Three session lifetimes of steady traffic on the same connections.
    end = time.monotonic() + 3 * REAUTH_MS / 1000
    while time.monotonic() < end:
        producer.produce("reauth", f"v{sent}".encode(), partition=0)
        sent += 1
        producer.poll(0)
        for msg in consumer.consume(100, timeout=0.1):
            assert msg.error() is None, msg.error()
            received.append(msg.value())
    assert producer.flush(10) == 0
    deadline = time.monotonic() + 20
    while len(received) < sent and time.monotonic() < deadline:
        for msg in consumer.consume(100, timeout=0.2):
            assert msg.error() is None, msg.error()
            received.append(msg.value())
    consumer.close()
    assert received == [f"v{i}".encode() for i in range(sent)]
    # No connection had to be closed for an expired session: librdkafka re-authenticated.
    assert server_log(cluster).count(EXPIRED) == before
