"""TLS listeners end to end: real clients (confluent-kafka, kafka-python, aiokafka, Raftka's
own) produce and consume over SSL; plaintext and garbage get closed connections without
hurting anyone else; ssl.client.auth=required refuses a client without a certificate; a
three-node cluster replicates over an SSL inter-broker listener and loses nothing
acknowledged when its leader is killed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import ssl
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
import trustme

from cluster.launcher.layout import HOST
from broker.network.tls import HANDSHAKE_TIMEOUT_S
from cluster.testing.cluster import RaftkaCluster, start_cluster
from cluster.testing.waiting import wait_for
from clients.admin import BlockingAdmin, NewTopic
from clients.consumer import BlockingConsumer
from clients.net import BlockingKafkaConnection, ClientSecurity, KafkaConnectionError
from clients.producer import BlockingProducer
from clients.protocol import ApiKey, encode_request

pytestmark = pytest.mark.slow


class Certificates:
    """A CA, a server certificate for 127.0.0.1/localhost and a client certificate, as PEM
    files (keystores hold the chain and the key, as ssl.keystore.location expects)."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        ca = trustme.CA()
        self.ca = directory / "ca.pem"
        ca.cert_pem.write_to_path(str(self.ca))
        self.server = directory / "server.pem"
        ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(
            str(self.server))
        self.client = directory / "alice.pem"
        ca.issue_cert("alice.example", common_name="alice", organization_unit_name="eng"
                      ).private_key_and_cert_chain_pem.write_to_path(str(self.client))

    def server_config(self, client_auth: str) -> dict[str, str]:
        # The launcher's client listener is named PLAINTEXT; mapping it to SSL makes every
        # client and inter-broker connection TLS (the controller listener stays plaintext).
        return {"listener.security.protocol.map": "PLAINTEXT:SSL,CONTROLLER:PLAINTEXT",
                "ssl.keystore.location": str(self.server),
                "ssl.truststore.location": str(self.ca),
                "ssl.client.auth": client_auth}

    def client_config(self, with_certificate: bool = False) -> dict[str, str]:
        config = {"security.protocol": "SSL", "ssl.truststore.location": str(self.ca)}
        if with_certificate:
            config["ssl.keystore.location"] = str(self.client)
        return config


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return Certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def ssl_cluster(tmp_path_factory: pytest.TempPathFactory,
                certificates: Certificates) -> Iterator[RaftkaCluster]:
    cluster = start_cluster(tmp_path_factory.mktemp("tls-cluster"), 1,
                            **_keywords(certificates.server_config("requested")))
    cluster.client_config = certificates.client_config()
    try:
        yield cluster
    finally:
        cluster.close()


def _keywords(config: dict[str, str]) -> dict[str, str]:
    """start_cluster takes keywords with underscores for dots."""
    return {key.replace(".", "_"): value for key, value in config.items()}


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _port(cluster: RaftkaCluster) -> int:
    port = cluster.info.brokers[0].client_port
    assert port is not None
    return port


def test_confluent_kafka_produces_and_consumes_over_ssl(
        ssl_cluster: RaftkaCluster, certificates: Certificates) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    topic = _topic("confluent")
    ssl_cluster.create_topic(topic)
    common = {"bootstrap.servers": ssl_cluster.bootstrap_servers, "security.protocol": "SSL",
              "ssl.ca.location": str(certificates.ca)}
    producer = confluent_kafka.Producer({**common, "acks": "all"})
    delivered: list[Any] = []
    for i in range(20):
        producer.produce(topic, f"value-{i}".encode(),
                         on_delivery=lambda err, msg: delivered.append(err))
    assert producer.flush(30) == 0
    assert delivered == [None] * 20
    consumer = confluent_kafka.Consumer({**common, "group.id": _topic("g"),
                                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        values: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(values) < 20 and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                values.append(message.value())
    finally:
        consumer.close()
    assert values == [f"value-{i}".encode() for i in range(20)]


def test_kafka_python_produces_and_consumes_over_ssl(
        ssl_cluster: RaftkaCluster, certificates: Certificates) -> None:
    kafka = pytest.importorskip("kafka")
    topic = _topic("kafka-python")
    ssl_cluster.create_topic(topic)
    common = {"bootstrap_servers": ssl_cluster.bootstrap_servers, "security_protocol": "SSL",
              "ssl_cafile": str(certificates.ca)}
    producer = kafka.KafkaProducer(acks="all", **common)
    for i in range(10):
        producer.send(topic, f"kp-{i}".encode()).get(timeout=30)
    producer.close()
    consumer = kafka.KafkaConsumer(topic, auto_offset_reset="earliest",
                                   consumer_timeout_ms=20000, **common)
    values = []
    for message in consumer:
        values.append(message.value)
        if len(values) == 10:
            break
    consumer.close()
    assert values == [f"kp-{i}".encode() for i in range(10)]


def test_aiokafka_produces_and_consumes_over_ssl(
        ssl_cluster: RaftkaCluster, certificates: Certificates) -> None:
    pytest.importorskip("aiokafka")
    topic = _topic("aiokafka")
    ssl_cluster.create_topic(topic)
    values = _run_aiokafka(ssl_cluster.bootstrap_servers, certificates.ca, topic)
    assert values == [f"aio-{i}".encode() for i in range(10)]


def _run_aiokafka(bootstrap: str, ca: Path, topic: str) -> list[bytes]:
    import asyncio

    import aiokafka
    from aiokafka.helpers import create_ssl_context

    async def main() -> list[bytes]:
        context = create_ssl_context(cafile=str(ca))
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap,
                                             security_protocol="SSL", ssl_context=context,
                                             acks="all")
        await producer.start()
        try:
            for i in range(10):
                await producer.send_and_wait(topic, f"aio-{i}".encode())
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(topic, bootstrap_servers=bootstrap,
                                             security_protocol="SSL", ssl_context=context,
                                             auto_offset_reset="earliest")
        await consumer.start()
        values: list[bytes] = []
        try:
            async with asyncio.timeout(30):
                async for message in consumer:
                    values.append(message.value)
                    if len(values) == 10:
                        break
        finally:
            await consumer.stop()
        return values

    return asyncio.run(main())


def test_raftka_clients_produce_and_consume_over_ssl(
        ssl_cluster: RaftkaCluster, certificates: Certificates) -> None:
    topic = _topic("raftka")
    config = {**certificates.client_config(), "bootstrap.servers": ssl_cluster.bootstrap_servers}
    with BlockingAdmin(config) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)])
    ssl_cluster.wait_for_isr(topic)
    producer = BlockingProducer({**config, "acks": "all"})
    futures = [producer.send(topic, f"own-{i}".encode()) for i in range(10)]
    producer.flush(30)
    assert [f.get(10).offset for f in futures] == list(range(10))
    producer.close()
    with BlockingConsumer({**config, "group.id": _topic("own"),
                           "auto.offset.reset": "earliest"}) as consumer:
        consumer.subscribe([topic])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < 10 and time.monotonic() < deadline:
            values += [record.value for record in consumer.poll(500)]
    assert values == [f"own-{i}".encode() for i in range(10)]


def test_a_client_that_does_not_trust_the_broker_fails_with_a_clear_error(
        ssl_cluster: RaftkaCluster) -> None:
    other_ca = trustme.CA()
    context = ssl.create_default_context()
    other_ca.configure_trust(context)
    with pytest.raises(KafkaConnectionError, match="TLS handshake with .* failed"):
        BlockingKafkaConnection(HOST, _port(ssl_cluster), timeout=10,
                                security=ClientSecurity("SSL", context))


def _api_versions_frame() -> bytes:
    frame = encode_request(ApiKey.API_VERSIONS, 0, 1, "plaintext-client", {})
    return len(frame).to_bytes(4, "big") + frame


def _closed_by_peer(sock: socket.socket, timeout: float) -> bool:
    """Whether the peer closes `sock` within `timeout`, whatever it sends first (a TLS
    alert is fine; a Kafka response is not expected)."""
    sock.settimeout(timeout)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not sock.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return False


def test_a_plaintext_client_on_a_tls_listener_gets_a_closed_connection(
        ssl_cluster: RaftkaCluster) -> None:
    with socket.create_connection((HOST, _port(ssl_cluster)), timeout=5) as sock:
        sock.sendall(_api_versions_frame())
        assert _closed_by_peer(sock, 5.0), "the broker left a plaintext client hanging"


def test_garbage_handshakes_neither_crash_the_broker_nor_disturb_other_connections(
        ssl_cluster: RaftkaCluster, certificates: Certificates) -> None:
    security = ClientSecurity.from_config(certificates.client_config())
    with BlockingKafkaConnection(HOST, _port(ssl_cluster), timeout=10,
                                 security=security) as established:
        before = established.request(ApiKey.METADATA, {"topics": []}, 1)
        # A truncated ClientHello: the broker waits for the rest only as long as a handshake
        # may take, then closes.
        stalled = socket.create_connection((HOST, _port(ssl_cluster)), timeout=5)
        stalled.sendall(b"\x16\x03\x01\x00\xff\x01\x00\x00\xfb\x03\x03")
        # A TLS record header announcing a handshake, then noise; pure noise; a connection
        # that closes at once: each is closed without waiting.
        payloads = [b"\x16\x03\x01\x02\x00" + os.urandom(512), os.urandom(2048), b""]
        for payload in payloads * 5:
            with socket.create_connection((HOST, _port(ssl_cluster)), timeout=5) as sock:
                if payload:
                    sock.sendall(payload)
                    assert _closed_by_peer(sock, 5.0)
        with stalled:
            assert _closed_by_peer(stalled, HANDSHAKE_TIMEOUT_S + 10)
        after = established.request(ApiKey.METADATA, {"topics": []}, 1)
        assert after["brokers"] == before["brokers"]
    with BlockingKafkaConnection(HOST, _port(ssl_cluster), timeout=10,
                                 security=security) as fresh:
        assert fresh.request(ApiKey.METADATA, {"topics": []}, 1)["brokers"]


@pytest.fixture(scope="module")
def mutual_tls_cluster(tmp_path_factory: pytest.TempPathFactory,
                       certificates: Certificates) -> Iterator[RaftkaCluster]:
    """Three nodes whose client and inter-broker listener requires client certificates:
    each broker's replica fetchers present its own certificate."""
    cluster = start_cluster(tmp_path_factory.mktemp("mtls-cluster"), 3,
                            min_insync_replicas="2",
                            **_keywords(certificates.server_config("required")))
    cluster.client_config = certificates.client_config(with_certificate=True)
    try:
        yield cluster
    finally:
        cluster.close()


def test_required_client_auth_refuses_a_client_without_a_certificate(
        mutual_tls_cluster: RaftkaCluster, certificates: Certificates) -> None:
    port = mutual_tls_cluster.info.brokers[0].client_port
    assert port is not None
    anonymous = ClientSecurity.from_config(certificates.client_config())
    with pytest.raises(KafkaConnectionError):
        BlockingKafkaConnection(HOST, port, timeout=10, security=anonymous)
    alice = ClientSecurity.from_config(certificates.client_config(with_certificate=True))
    with BlockingKafkaConnection(HOST, port, timeout=10, security=alice) as conn:
        assert conn.request(ApiKey.METADATA, {"topics": []}, 1)["brokers"]


def test_replication_over_ssl_survives_killing_the_leader(
        mutual_tls_cluster: RaftkaCluster) -> None:
    cluster = mutual_tls_cluster
    topic = _topic("replicated")
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    config = {**cluster.client_config, "bootstrap.servers": cluster.bootstrap_servers}
    acknowledged: list[bytes] = []
    producer = BlockingProducer({**config, "acks": "all", "linger.ms": "0"})
    try:
        for i in range(50):
            value = f"before-{i}".encode()
            producer.send(topic, value).get(30)
            acknowledged.append(value)
        with cluster.admin() as admin:
            leader = admin.describe_topics([topic])[0].partitions[0].leader
        cluster.kill(leader)

        def new_leader() -> int | None:
            try:
                with cluster.admin() as admin:
                    chosen = admin.describe_topics([topic])[0].partitions[0].leader
            except Exception:
                return None
            return chosen if chosen not in (-1, leader) else None

        wait_for(new_leader, "a new leader after killing the old one", 60)
        for i in range(50):
            value = f"after-{i}".encode()
            producer.send(topic, value).get(60)
            acknowledged.append(value)
    finally:
        producer.close()
    # Without a group: __consumer_offsets needs three live brokers.
    with BlockingConsumer({**config, "auto.offset.reset": "earliest"}) as consumer:
        consumer.assign([(topic, 0)])
        seen: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(seen) < len(acknowledged) and time.monotonic() < deadline:
            seen += [record.value for record in consumer.poll(500)]
    assert set(acknowledged) <= set(seen)


RAFTKA = str(Path(sys.executable).parent / "raftka")


def _raftka(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([RAFTKA, *args], input=stdin, capture_output=True, text=True,
                          timeout=90)


def test_the_cli_connects_over_ssl_with_command_config(
        ssl_cluster: RaftkaCluster, certificates: Certificates, tmp_path: Path) -> None:
    settings = tmp_path / "client.properties"
    settings.write_text("".join(f"{k}={v}\n" for k, v in certificates.client_config().items()))
    b = ssl_cluster.bootstrap_servers
    topic = _topic("cli")
    created = _raftka("topics", "--bootstrap-server", b, "--command-config", str(settings),
                      "--create", "--topic", topic)
    assert created.returncode == 0, created.stderr
    produced = _raftka("console-producer", "--bootstrap-server", b, "--topic", topic,
                       "--command-config", str(settings), stdin="one\ntwo\n")
    assert produced.returncode == 0, produced.stderr
    consumed = _raftka("console-consumer", "--bootstrap-server", b, "--topic", topic,
                       "--from-beginning", "--max-messages", "2", "--timeout-ms", "30000",
                       "--command-config", str(settings))
    assert consumed.stdout.splitlines() == ["one", "two"], consumed.stderr
    for command in (["groups", "--list"], ["quorum", "describe", "--status"],
                    ["broker-api-versions"], ["get-offsets", "--topic", topic]):
        answered = _raftka(*command, "--bootstrap-server", b, "--command-config",
                           str(settings))
        assert answered.returncode == 0, (command, answered.stderr)
    # Without the settings the same command cannot talk to the TLS listener: one line, exit 1.
    refused = _raftka("topics", "--bootstrap-server", b, "--list", "--timeout-ms", "2000")
    assert refused.returncode == 1
    assert len(refused.stderr.strip().splitlines()) == 1
    missing = _raftka("topics", "--bootstrap-server", b, "--list", "--command-config",
                      str(tmp_path / "absent.properties"))
    assert missing.returncode == 1 and "absent.properties" in missing.stderr
    # A CA that does not sign the broker's certificate fails the handshake: not retried
    # until --timeout-ms (60 s by default), as Kafka's SslAuthenticationException is not.
    other_ca = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other_ca))
    untrusted = tmp_path / "untrusted.properties"
    untrusted.write_text(f"security.protocol=SSL\nssl.truststore.location={other_ca}\n")
    started = time.monotonic()
    distrusted = _raftka("topics", "--bootstrap-server", b, "--list", "--command-config",
                         str(untrusted))
    assert distrusted.returncode == 1 and "TLS handshake" in distrusted.stderr
    assert time.monotonic() - started < 30, distrusted.stderr
