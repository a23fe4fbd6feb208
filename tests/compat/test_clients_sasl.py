"""confluent-kafka, kafka-python and aiokafka over a SASL_PLAINTEXT listener: PLAIN users from
the listener's JAAS config, a SCRAM user from `raftka storage format --add-scram` and one
added at runtime with `raftka configs`, a wrong password refused with no data, and Raftka's
own clients and CLI authenticating the same way."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from typing import Iterator

import pytest

from clients.admin import BlockingAdmin
from clients.consumer import BlockingConsumer
from clients.producer import BlockingProducer
from clients.protocol import ApiKey, KafkaError
from tests.compat.cluster import HOST
from tests.compat.sasl_cluster import SaslCluster, sasl_cluster

confluent_kafka = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")
aiokafka = pytest.importorskip("aiokafka")

RECORDS = 200
USERS = {"admin": "admin-secret", "alice": "alice-secret"}
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="admin-secret" '
        + " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslCluster]:
    """One combined node with a PLAINTEXT and a SASL_PLAINTEXT listener; carol's SCRAM
    credential comes from `storage format --add-scram`."""
    with sasl_cluster(tmp_path_factory.mktemp("sasl"), JAAS,
                      ["--add-scram", "SCRAM-SHA-512=[name=carol,password=carol-secret]"]
                      ) as started:
        add_scram_users(started)
        yield started


def raftka(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "broker.cli.main", *args],
                          capture_output=True, text=True, timeout=60)


def add_scram_users(cluster: SaslCluster) -> None:
    """carol comes from `storage format --add-scram`; dave is added now with `raftka configs`
    through the SASL listener, authenticated as carol (a --command-config with JAAS)."""
    command_config = cluster.info.dir / "carol.properties"
    command_config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="carol" password="carol-secret";\n')
    added = raftka("configs", "--bootstrap-server", cluster.sasl_bootstrap,
                   "--command-config", str(command_config), "--alter",
                   "--entity-type", "users", "--entity-name", "dave",
                   "--add-config", "SCRAM-SHA-256=[iterations=8192,password=dave-pw]")
    assert added.returncode == 0, added.stderr
    assert added.stdout.strip() == "Completed updating config for user dave."
    described = raftka("configs", "--bootstrap-server", cluster.bootstrap, "--describe",
                       "--entity-type", "users")
    assert described.returncode == 0, described.stderr
    assert described.stdout.splitlines() == [
        "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-512=iterations=4096",
        "SCRAM credential configs for user-principal 'dave' are SCRAM-SHA-256=iterations=8192"]


def confluent_config(cluster: SaslCluster, mechanism: str, user: str, password: str) -> dict:
    return {"bootstrap.servers": cluster.sasl_bootstrap, "broker.address.family": "v4",
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.username": user, "sasl.password": password}


CREDENTIALS = [("PLAIN", "alice", "alice-secret"),
               ("SCRAM-SHA-512", "carol", "carol-secret")]


@pytest.mark.parametrize("mechanism,user,password", CREDENTIALS + [
    ("SCRAM-SHA-256", "dave", "dave-pw")])
def test_confluent_produce_and_consume(cluster: SaslCluster, mechanism: str, user: str,
                                       password: str) -> None:
    topic = f"confluent-{mechanism}"
    cluster.create_topic(topic)
    config = confluent_config(cluster, mechanism, user, password)
    producer = confluent_kafka.Producer({**config, "acks": "all"})
    for i in range(RECORDS):
        producer.produce(topic, f"v{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    consumer = confluent_kafka.Consumer({**config, "group.id": f"g-{mechanism}",
                                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(values) < RECORDS and time.monotonic() < deadline:
        for msg in consumer.consume(500, timeout=0.5):
            assert msg.error() is None, msg.error()
            values.append(msg.value())
    consumer.close()
    assert values == [f"v{i}".encode() for i in range(RECORDS)]


def test_confluent_wrong_password_gets_an_authentication_error_and_no_data(
        cluster: SaslCluster) -> None:
    topic = "confluent-denied"
    cluster.create_topic(topic)
    errors: list[object] = []
    for mechanism, user, _ in CREDENTIALS:
        consumer = confluent_kafka.Consumer({
            **confluent_config(cluster, mechanism, user, "wrong"), "group.id": "denied",
            "auto.offset.reset": "earliest", "error_cb": errors.append})
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
        messages = consumer.consume(10, timeout=3)
        consumer.close()
        assert [m for m in messages if m.error() is None] == []
    assert any(e.code() == confluent_kafka.KafkaError._AUTHENTICATION for e in errors), errors


@pytest.mark.parametrize("mechanism,user,password", CREDENTIALS)
def test_kafka_python_produce_and_consume(cluster: SaslCluster, mechanism: str, user: str,
                                          password: str) -> None:
    topic = f"kafka-python-{mechanism}"
    cluster.create_topic(topic)
    auth = {"bootstrap_servers": cluster.sasl_bootstrap, "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism, "sasl_plain_username": user,
            "sasl_plain_password": password}
    producer = kafka.KafkaProducer(**auth)
    for i in range(RECORDS):
        producer.send(topic, f"v{i}".encode(), partition=0)
    producer.flush(30)
    producer.close()
    consumer = kafka.KafkaConsumer(topic, group_id=None, auto_offset_reset="earliest",
                                   consumer_timeout_ms=10_000, **auth)
    values = [m.value for m in consumer][:RECORDS]
    consumer.close()
    assert values == [f"v{i}".encode() for i in range(RECORDS)]


def test_kafka_python_wrong_password(cluster: SaslCluster,
                                     caplog: pytest.LogCaptureFixture) -> None:
    topic = "kafka-python-denied"
    cluster.create_topic(topic)
    received: list[object] = []
    with pytest.raises(kafka.errors.KafkaError) as failure:
        consumer = kafka.KafkaConsumer(
            topic, bootstrap_servers=cluster.sasl_bootstrap, group_id=None,
            security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username="carol", sasl_plain_password="wrong",
            request_timeout_ms=5000, consumer_timeout_ms=3000, bootstrap_timeout_ms=5000)
        received.extend(consumer)
    assert received == []
    # kafka-python logs the broker's refusal and reports it as a failed bootstrap.
    assert "bootstrap" in str(failure.value)
    assert any("Invalid username or password" in record.getMessage()
               for record in caplog.records), [r.getMessage() for r in caplog.records][-5:]


@pytest.mark.parametrize("mechanism,user,password", CREDENTIALS)
def test_aiokafka_produce_and_consume(cluster: SaslCluster, mechanism: str, user: str,
                                      password: str) -> None:
    topic = f"aiokafka-{mechanism}"
    cluster.create_topic(topic)
    auth = {"bootstrap_servers": cluster.sasl_bootstrap, "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism, "sasl_plain_username": user,
            "sasl_plain_password": password}

    async def run() -> list[bytes]:
        producer = aiokafka.AIOKafkaProducer(acks="all", **auth)
        await producer.start()
        try:
            for i in range(RECORDS):
                await producer.send(topic, f"v{i}".encode(), partition=0)
            await producer.flush()
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(topic, group_id=None,
                                             auto_offset_reset="earliest", **auth)
        await consumer.start()
        values: list[bytes] = []
        try:
            async def drain() -> None:
                while len(values) < RECORDS:
                    polled = await consumer.getmany(timeout_ms=500)
                    for batch in polled.values():
                        values.extend(m.value for m in batch)
            await asyncio.wait_for(drain(), 30)
        finally:
            await consumer.stop()
        return values

    assert asyncio.run(run()) == [f"v{i}".encode() for i in range(RECORDS)]


def test_aiokafka_wrong_password(cluster: SaslCluster) -> None:
    async def run() -> None:
        producer = aiokafka.AIOKafkaProducer(
            bootstrap_servers=cluster.sasl_bootstrap, security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="carol",
            sasl_plain_password="wrong", request_timeout_ms=5000)
        try:
            await producer.start()
        finally:
            await producer.stop()

    with pytest.raises(Exception) as failure:
        asyncio.run(run())
    assert "auth" in repr(failure.value).lower() or "connection" in repr(failure.value).lower()


@pytest.mark.parametrize("mechanism,user,password", CREDENTIALS)
def test_raftka_clients_authenticate(cluster: SaslCluster, mechanism: str, user: str,
                                     password: str) -> None:
    topic = f"raftka-{mechanism}"
    cluster.create_topic(topic)
    auth = {"bootstrap.servers": cluster.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}
    with BlockingProducer(auth) as producer:
        for i in range(RECORDS):
            producer.send(topic, f"v{i}".encode(), partition=0)
        producer.flush()
    with BlockingConsumer({**auth, "group.id": f"raftka-{mechanism}",
                           "auto.offset.reset": "earliest"}) as consumer:
        consumer.subscribe([topic])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < RECORDS and time.monotonic() < deadline:
            values.extend(r.value for r in consumer.poll(500))
    assert values == [f"v{i}".encode() for i in range(RECORDS)]


def test_configs_delete_config_removes_a_credential(cluster: SaslCluster) -> None:
    with BlockingAdmin({"bootstrap.servers": cluster.bootstrap}) as admin:
        admin.upsert_scram_credential("erin", "SCRAM-SHA-512", "erin-pw")
    auth = {"bootstrap.servers": cluster.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "erin",
            "sasl.password": "erin-pw"}
    with BlockingAdmin(auth) as admin:
        assert "erin" in admin.describe_scram_credentials()
    deleted = raftka("configs", "--bootstrap-server", cluster.bootstrap, "--alter",
                     "--entity-type", "users", "--entity-name", "erin",
                     "--delete-config", "SCRAM-SHA-512")
    assert deleted.returncode == 0, deleted.stderr
    with pytest.raises(KafkaError) as failure:
        with BlockingAdmin(auth) as admin:
            admin.list_topics()
    assert failure.value.code == 58
    again = raftka("configs", "--bootstrap-server", cluster.bootstrap, "--alter",
                   "--entity-type", "users", "--entity-name", "erin",
                   "--delete-config", "SCRAM-SHA-512")
    assert again.returncode == 1
    assert again.stderr.startswith("Error: Attempt to delete a user credential that does "
                                   "not exist"), again.stderr


def test_raftka_client_wrong_password(cluster: SaslCluster) -> None:
    with pytest.raises(KafkaError) as failure:
        with BlockingAdmin({"bootstrap.servers": cluster.sasl_bootstrap,
                            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                            "sasl.username": "alice", "sasl.password": "wrong"}) as admin:
            admin.list_topics()
    assert failure.value.code == 58


def test_requests_on_the_sasl_port_before_authentication_close_the_connection(
        cluster: SaslCluster) -> None:
    from clients.net import BlockingKafkaConnection, KafkaConnectionError

    with BlockingKafkaConnection(HOST, cluster.sasl_port) as conn:
        conn.request(ApiKey.METADATA, {"topics": None, "allow_auto_topic_creation": False,
                                       "include_topic_authorized_operations": False})
        with pytest.raises(KafkaConnectionError):
            conn.request(ApiKey.METADATA, {"topics": None, "allow_auto_topic_creation": False,
                                           "include_topic_authorized_operations": False})
