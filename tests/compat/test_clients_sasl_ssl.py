"""SASL_SSL: confluent-kafka, kafka-python, aiokafka and Raftka's own clients produce and
consume with SCRAM-SHA-512 over TLS (certificates made here with trustme); a wrong password
gets no data; a client that skips TLS gets a closed connection."""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from pathlib import Path
from typing import Iterator

import pytest
import trustme

from clients.admin import BlockingAdmin
from clients.consumer import BlockingConsumer
from clients.producer import BlockingProducer
from clients.protocol import KafkaError
from tests.compat.cluster import HOST
from tests.compat.sasl_cluster import SaslCluster, sasl_cluster

confluent_kafka = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")
aiokafka = pytest.importorskip("aiokafka")

RECORDS = 200
USER, PASSWORD = "carol", "carol-secret"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_admin="admin-secret";')


@pytest.fixture(scope="module")
def ca_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    directory = tmp_path_factory.mktemp("sasl-ssl-certs")
    ca = trustme.CA()
    ca_path, server_path = directory / "ca.pem", directory / "server.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(
        str(server_path))
    yield ca_path, server_path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory,
            ca_file: tuple[Path, Path]) -> Iterator[SaslCluster]:
    ca_path, server_path = ca_file
    overrides = {
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,"
                                          "SASL_PLAINTEXT:SASL_SSL",
        "listener.name.sasl_plaintext.ssl.keystore.location": str(server_path),
    }
    with sasl_cluster(tmp_path_factory.mktemp("sasl-ssl"), JAAS,
                      ["--add-scram", f"SCRAM-SHA-512=[name={USER},password={PASSWORD}]"],
                      overrides) as started:
        yield started


def test_confluent_over_sasl_ssl(cluster: SaslCluster, ca_file: tuple[Path, Path]) -> None:
    cluster.create_topic("confluent-sasl-ssl")
    config = {"bootstrap.servers": cluster.sasl_bootstrap, "broker.address.family": "v4",
              "security.protocol": "SASL_SSL", "ssl.ca.location": str(ca_file[0]),
              "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": USER,
              "sasl.password": PASSWORD}
    producer = confluent_kafka.Producer({**config, "acks": "all"})
    for i in range(RECORDS):
        producer.produce("confluent-sasl-ssl", f"v{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    consumer = confluent_kafka.Consumer({**config, "group.id": "sasl-ssl",
                                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["confluent-sasl-ssl"])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(values) < RECORDS and time.monotonic() < deadline:
        for msg in consumer.consume(500, timeout=0.5):
            assert msg.error() is None, msg.error()
            values.append(msg.value())
    consumer.close()
    assert values == [f"v{i}".encode() for i in range(RECORDS)]
    errors: list[object] = []
    denied = confluent_kafka.Consumer({**config, "sasl.password": "wrong", "group.id": "no",
                                       "error_cb": errors.append})
    denied.assign([confluent_kafka.TopicPartition("confluent-sasl-ssl", 0, 0)])
    assert [m for m in denied.consume(10, timeout=3) if m.error() is None] == []
    denied.close()
    assert any(e.code() == confluent_kafka.KafkaError._AUTHENTICATION for e in errors), errors


def test_kafka_python_over_sasl_ssl(cluster: SaslCluster, ca_file: tuple[Path, Path]) -> None:
    cluster.create_topic("kafka-python-sasl-ssl")
    auth = {"bootstrap_servers": cluster.sasl_bootstrap, "security_protocol": "SASL_SSL",
            "ssl_cafile": str(ca_file[0]), "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": USER, "sasl_plain_password": PASSWORD}
    producer = kafka.KafkaProducer(**auth)
    for i in range(RECORDS):
        producer.send("kafka-python-sasl-ssl", f"v{i}".encode(), partition=0)
    producer.flush(30)
    producer.close()
    consumer = kafka.KafkaConsumer("kafka-python-sasl-ssl", group_id=None,
                                   auto_offset_reset="earliest", consumer_timeout_ms=10_000,
                                   **auth)
    values = [m.value for m in consumer][:RECORDS]
    consumer.close()
    assert values == [f"v{i}".encode() for i in range(RECORDS)]


def test_aiokafka_over_sasl_ssl(cluster: SaslCluster, ca_file: tuple[Path, Path]) -> None:
    cluster.create_topic("aiokafka-sasl-ssl")
    context = ssl.create_default_context(cafile=str(ca_file[0]))
    auth = {"bootstrap_servers": cluster.sasl_bootstrap, "security_protocol": "SASL_SSL",
            "ssl_context": context, "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": USER, "sasl_plain_password": PASSWORD}

    async def run() -> list[bytes]:
        producer = aiokafka.AIOKafkaProducer(acks="all", **auth)
        await producer.start()
        try:
            for i in range(RECORDS):
                await producer.send("aiokafka-sasl-ssl", f"v{i}".encode(), partition=0)
            await producer.flush()
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer("aiokafka-sasl-ssl", group_id=None,
                                             auto_offset_reset="earliest", **auth)
        await consumer.start()
        values: list[bytes] = []
        try:
            async def drain() -> None:
                while len(values) < RECORDS:
                    for batch in (await consumer.getmany(timeout_ms=500)).values():
                        values.extend(m.value for m in batch)
            await asyncio.wait_for(drain(), 30)
        finally:
            await consumer.stop()
        return values

    assert asyncio.run(run()) == [f"v{i}".encode() for i in range(RECORDS)]


def test_raftka_clients_over_sasl_ssl(cluster: SaslCluster,
                                      ca_file: tuple[Path, Path]) -> None:
    cluster.create_topic("raftka-sasl-ssl")
    auth = {"bootstrap.servers": cluster.sasl_bootstrap, "security.protocol": "SASL_SSL",
            "ssl.truststore.location": str(ca_file[0]), "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": USER, "sasl.password": PASSWORD}
    with BlockingProducer(auth) as producer:
        for i in range(RECORDS):
            producer.send("raftka-sasl-ssl", f"v{i}".encode(), partition=0)
        producer.flush()
    with BlockingConsumer({**auth, "auto.offset.reset": "earliest"}) as consumer:
        consumer.assign([("raftka-sasl-ssl", 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < RECORDS and time.monotonic() < deadline:
            values.extend(r.value for r in consumer.poll(500))
    assert values == [f"v{i}".encode() for i in range(RECORDS)]
    with pytest.raises(KafkaError) as failure:
        with BlockingAdmin({**auth, "sasl.password": "wrong"}) as admin:
            admin.list_topics()
    assert failure.value.code == 58


def test_a_client_without_tls_gets_a_closed_connection(cluster: SaslCluster) -> None:
    with socket.create_connection((HOST, cluster.sasl_port), timeout=10) as sock:
        sock.sendall(b"\x00\x00\x00\x0a" + b"\x00" * 10)
        try:
            assert sock.recv(1024) == b""
        except ConnectionResetError:
            pass
