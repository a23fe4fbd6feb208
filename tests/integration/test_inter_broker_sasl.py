"""Three brokers whose only client and inter-broker listener is SASL_PLAINTEXT or SASL_SSL:
followers authenticate to leaders with sasl.mechanism.inter.broker.protocol and the listener's
JAAS username and password (over TLS, trusting the CA in ssl.truststore.location), replicate,
and a kill -9 of a leader loses nothing acknowledged. A group coordinator reads the lag of
partitions it holds no replica of through that listener too."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Iterator

import pytest
import trustme

from cluster.launcher import LauncherError, bootstrap_quorum, stop_quorum
from cluster.launcher.layout import ClusterInfo, NodeInfo
from cluster.launcher.ports import pick_base_port
from cluster.testing.metrics import metrics_url, scrape, value
from cluster.testing.waiting import wait_for
from clients.admin import BlockingAdmin
from clients.admin.operations import NewTopic
from clients.net import BlockingKafkaConnection, ClientSecurity, KafkaConnectionError
from clients.net.sasl import SaslCredentials
from clients.protocol import ApiKey, KafkaError

confluent_kafka = pytest.importorskip("confluent_kafka")

HOST = "127.0.0.1"
ADMIN = SaslCredentials("SCRAM-SHA-512", "admin", "admin-secret")
SASL_OVERRIDES = {
    "sasl.enabled.mechanisms": "SCRAM-SHA-512",
    "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
    "listener.name.plaintext.scram-sha-512.sasl.jaas.config":
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="admin" password="admin-secret";',
    "min.insync.replicas": "2",
}
FORMAT_ARGS = ["--add-scram", "SCRAM-SHA-512=[name=admin,password=admin-secret]"]
SCRAM = {"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "admin",
         "sasl.password": "admin-secret"}


class Setup:
    """One protocol's broker overrides and the client settings that reach its listener."""

    def __init__(self, protocol: str, directory: Path) -> None:
        # The launcher's client listener is named PLAINTEXT; mapping it makes every client
        # and inter-broker connection use `protocol` (the controller listener stays plain).
        self.overrides = {**SASL_OVERRIDES, "listener.security.protocol.map":
                          f"PLAINTEXT:{protocol},CONTROLLER:PLAINTEXT"}
        self.auth = {"security.protocol": protocol, **SCRAM}
        self.raftka_auth = dict(self.auth)
        if protocol == "SASL_SSL":
            ca = trustme.CA()
            ca_path, server = directory / "ca.pem", directory / "server.pem"
            ca.cert_pem.write_to_path(str(ca_path))
            ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem \
                .write_to_path(str(server))
            # The listener's certificate, and the CA the broker's own fetchers trust.
            self.overrides.update({"ssl.keystore.location": str(server),
                                   "ssl.truststore.location": str(ca_path)})
            self.auth["ssl.ca.location"] = str(ca_path)
            self.raftka_auth["ssl.truststore.location"] = str(ca_path)
        self.security = ClientSecurity.from_config(self.raftka_auth)


def sasl_ready(security: ClientSecurity) -> Callable[[ClusterInfo, NodeInfo], bool]:
    """The launcher's check, authenticated: Metadata lists every broker and a controller."""
    def ready(cluster: ClusterInfo, node: NodeInfo) -> bool:
        if node.client_port is None:
            return True
        try:
            with BlockingKafkaConnection(HOST, node.client_port, timeout=2.0, sasl=ADMIN,
                                         security=security) as conn:
                body = conn.request(ApiKey.METADATA, {
                    "topics": [], "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": False})
        except (KafkaConnectionError, KafkaError, OSError):
            return False
        listed = {b["node_id"] for b in body["brokers"]}
        return body["controller_id"] >= 0 and {b.node_id for b in cluster.brokers} <= listed
    return ready


@pytest.fixture(scope="module", params=["SASL_PLAINTEXT", "SASL_SSL"])
def setup(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> Setup:
    return Setup(request.param, tmp_path_factory.mktemp("ibsasl-certs"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, setup: Setup) -> Iterator[ClusterInfo]:
    directory = tmp_path_factory.mktemp("ibsasl")
    info = None
    for attempt in range(5):
        try:
            info = bootstrap_quorum(directory / f"c{attempt}", 3, 0, pick_base_port(3, 0),
                                    setup.overrides, ready=sasl_ready(setup.security),
                                    timeout=60.0, format_args=FORMAT_ARGS)
            break
        except LauncherError as exc:
            if "already in use" not in str(exc).lower():
                raise
    assert info is not None
    try:
        yield info
    finally:
        try:
            stop_quorum(info.dir, kill=True, timeout=10.0)
        except LauncherError:
            pass


def isr(bootstrap: str, topic: str, setup: Setup) -> tuple[int, tuple[int, ...]] | None:
    try:
        with BlockingAdmin({"bootstrap.servers": bootstrap, **setup.raftka_auth}) as client:
            (described,) = client.describe_topics([topic])
    except (KafkaConnectionError, KafkaError):
        return None
    partition = described.partitions[0]
    return partition.leader, tuple(sorted(partition.isr))


def test_group_lag_of_a_partition_led_elsewhere_is_read_over_sasl(cluster: ClusterInfo,
                                                                   setup: Setup) -> None:
    bootstrap = cluster.bootstrap_servers
    group = "sasl-lag"
    with BlockingAdmin({"bootstrap.servers": bootstrap, **setup.raftka_auth}) as client:
        client.create_topics([NewTopic("lag-near", 1, 1)])
        wait_for(lambda: isr(bootstrap, "lag-near", setup), "lag-near led", timeout=30)
        client.alter_group_offsets(group, {("lag-near", 0): 0})
        described = client.describe_groups([group])[group]
        assert not isinstance(described, KafkaError), described
        coordinator = described.coordinator_id
        elsewhere = next(n.node_id for n in cluster.brokers if n.node_id != coordinator)
        client.create_topics([NewTopic("lag-far", -1, -1,
                                       replica_assignments={0: [elsewhere]})])
    wait_for(lambda: isr(bootstrap, "lag-far", setup), "lag-far led", timeout=30)
    # One replica, under the cluster's min.insync.replicas=2: acks=1.
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "1",
                                         "broker.address.family": "v4", **setup.auth})
    for i in range(10):
        producer.produce("lag-far", b"v%d" % i, partition=0)
    assert producer.flush(30) == 0
    with BlockingAdmin({"bootstrap.servers": bootstrap, **setup.raftka_auth}) as client:
        client.alter_group_offsets(group, {("lag-far", 0): 4})
    port = cluster.node(coordinator).metrics_port
    assert port is not None
    labels = {"consumergroup": group, "topic": "lag-far", "partition": "0"}
    # The coordinator reads the leader's high watermark every 10 s, authenticating with the
    # broker's inter-broker credentials.
    wait_for(lambda: value(scrape(metrics_url(HOST, port)), "kafka_consumergroup_lag",
                           labels) == 6, f"lag 6 on coordinator {coordinator}", timeout=40)


def test_replication_over_sasl_survives_a_leader_kill(cluster: ClusterInfo,
                                                     setup: Setup) -> None:
    bootstrap = cluster.bootstrap_servers
    with BlockingAdmin({"bootstrap.servers": bootstrap, **setup.raftka_auth}) as client:
        client.create_topics([NewTopic("replicated", 1, 3)])
    leader, members = wait_for(lambda: (s := isr(bootstrap, "replicated", setup)) and len(s[1]) == 3
                               and s, "three in-sync replicas over SASL", timeout=30)
    assert members == (1, 2, 3)
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                         "enable.idempotence": True,
                                         "broker.address.family": "v4", **setup.auth})
    acked: list[bytes] = []

    def delivered(err, msg) -> None:  # type: ignore[no-untyped-def]
        if err is None:
            acked.append(msg.value())

    for i in range(500):
        producer.produce("replicated", f"v{i}".encode(), partition=0, on_delivery=delivered)
    assert producer.flush(30) == 0
    assert len(acked) == 500
    stop_quorum(cluster.dir, node_id=leader, kill=True, timeout=10.0)
    survivors = ",".join(f"{HOST}:{n.client_port}" for n in cluster.brokers
                         if n.node_id != leader)
    wait_for(lambda: (s := isr(survivors, "replicated", setup)) and s[0] not in (leader, -1),
             "a new leader", timeout=30)
    consumer = confluent_kafka.Consumer({"bootstrap.servers": survivors, "group.id": "check",
                                         "auto.offset.reset": "earliest",
                                         "broker.address.family": "v4", **setup.auth})
    consumer.assign([confluent_kafka.TopicPartition("replicated", 0, 0)])
    seen: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(seen) < len(acked) and time.monotonic() < deadline:
        for msg in consumer.consume(500, timeout=0.5):
            assert msg.error() is None, msg.error()
            seen.append(msg.value())
    consumer.close()
    assert seen == acked
