"""Two SASL/PLAIN principals against one node with the StandardAuthorizer on: alice, granted
--producer and --consumer on a topic and group, produces and consumes with confluent-kafka;
bob, granted nothing, gets TOPIC_ and GROUP_AUTHORIZATION_FAILED, does not see the topic in
Metadata and may not read the ACLs. alice's transactional producer needs WRITE on its
transactional id before it may start, and then commits what a read_committed consumer reads.
The node's own traffic and the admin tool use the
PLAINTEXT listeners, whose User:ANONYMOUS is the super user."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from cluster.launcher import ClusterInfo, bootstrap_quorum, stop_quorum
from cluster.launcher.ports import free_ports, pick_base_port
from cluster.testing.waiting import wait_for
from tests.integration.quorum_helpers import CONSUMER
from tests.integration.test_cli_tools import raftka

pytestmark = pytest.mark.slow

HOST = "127.0.0.1"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_alice="alice-secret" user_bob="bob-secret";')


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ClusterInfo, str]]:
    base = pick_base_port(1)
    (sasl_port,) = free_ports(1)
    sasl = f"{HOST}:{sasl_port}"
    overrides = {
        "listeners": f"PLAINTEXT://{HOST}:{base},CONTROLLER://{HOST}:{base + 100},"
                     f"SASL_PLAINTEXT://{sasl}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{base},SASL_PLAINTEXT://{sasl}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,"
                                          "SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS",
        "group.initial.rebalance.delay.ms": "0",
        "group.min.session.timeout.ms": "1000",
    }
    info = bootstrap_quorum(tmp_path_factory.mktemp("acl-sasl"), nodes=1, base_port=base,
                            overrides=overrides, timeout=90)
    try:
        yield info, sasl
    finally:
        stop_quorum(info.dir)


def as_user(name: str, sasl: str) -> dict[str, Any]:
    return {"bootstrap.servers": sasl, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": name,
            "sasl.password": f"{name}-secret"}


def acls(info: ClusterInfo, *args: str) -> subprocess.CompletedProcess[str]:
    result = raftka("acls", "--bootstrap-server", info.bootstrap_servers, *args)
    assert result.returncode == 0, result.stderr
    return result


def produce_error(config: dict[str, Any], topic: str) -> int | None:
    from confluent_kafka import Producer

    reports: list[Any] = []
    producer = Producer({**config, "message.timeout.ms": 10000})
    producer.produce(topic, value=b"v", on_delivery=lambda err, msg: reports.append(err))
    producer.flush(20)
    assert len(reports) == 1
    return None if reports[0] is None else reports[0].code()


def consume(config: dict[str, Any], topic: str, group: str) -> Any:
    from confluent_kafka import Consumer

    consumer = Consumer({**config, "group.id": group, **CONSUMER})
    consumer.subscribe([topic])
    try:
        message = wait_for(lambda: consumer.poll(0.5), "a record or an error", 30)
        if message.error() is None:
            consumer.commit(message, asynchronous=False)  # the group outlives the consumer
        return message
    finally:
        consumer.close()


def test_two_sasl_principals_get_what_their_acls_say(node: tuple[ClusterInfo, str]) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    info, sasl = node
    alice, bob = as_user("alice", sasl), as_user("bob", sasl)
    created = raftka("topics", "--bootstrap-server", info.bootstrap_servers, "--create",
                     "--topic", "payments", "--partitions", "1", "--replication-factor", "1")
    assert created.returncode == 0, created.stderr
    acls(info, "--add", "--allow-principal", "User:alice", "--producer", "--consumer",
         "--topic", "payments", "--group", "pay-group")
    wait_for(lambda: "pay-group" in acls(info, "--list").stdout, "the ACLs listed", 15)

    assert produce_error(alice, "payments") is None
    record = consume(alice, "payments", "pay-group")
    assert record.error() is None and record.value() == b"v"

    assert produce_error(bob, "payments") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    bob_read = consume(bob, "payments", f"bob-{uuid.uuid4()}")
    assert bob_read.error().code() in (KafkaError.TOPIC_AUTHORIZATION_FAILED,
                                       KafkaError.GROUP_AUTHORIZATION_FAILED)
    assert consume(bob, "payments", "pay-group").error().code() in (
        KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED)

    bob_admin = AdminClient(bob)
    assert "payments" not in bob_admin.list_topics(timeout=10).topics
    assert "payments" in AdminClient(alice).list_topics(timeout=10).topics
    refused = bob_admin.create_acls([AclBinding(
        ResourceType.TOPIC, "payments", ResourcePatternType.LITERAL, "User:bob", "*",
        AclOperation.WRITE, AclPermissionType.ALLOW)])
    with pytest.raises(KafkaException, match="CLUSTER_AUTHORIZATION_FAILED"):
        for future in refused.values():
            future.result(timeout=15)

    # Raftka's own tool as bob (--command-config): refused in one line.
    config = Path(info.dir) / "bob.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                      "sasl.username=bob\nsasl.password=bob-secret\n")
    as_bob = raftka("acls", "--bootstrap-server", sasl, "--command-config", str(config),
                    "--list")
    assert as_bob.returncode == 1
    assert as_bob.stderr.splitlines() == [
        "Error while executing ACL command: describing ACLs: Cluster authorization failed."], \
        as_bob.stderr

    # Granting bob READ on the topic and group lets him consume (the wildcard host).
    acls(info, "--add", "--allow-principal", "User:bob", "--consumer", "--topic", "payments",
         "--group", "bob-group")
    wait_for(lambda: "User:bob" in acls(info, "--list", "--topic", "payments").stdout,
             "bob's ACLs listed", 15)
    record = consume(bob, "payments", "bob-group")
    assert record.error() is None and record.value() == b"v"
    assert produce_error(bob, "payments") == KafkaError.TOPIC_AUTHORIZATION_FAILED

    # ListGroups without DESCRIBE on the cluster: only the groups one may describe.
    def listed(config: dict[str, Any]) -> set[str]:
        admin = AdminClient(config)  # kept alive until the result is in
        result = admin.list_consumer_groups().result(timeout=15)
        assert result.errors == []
        return {group.group_id for group in result.valid}
    assert listed(bob) == {"bob-group"}
    assert listed(alice) == {"pay-group"}
    assert listed({"bootstrap.servers": info.bootstrap_servers}) == {"pay-group", "bob-group"}


def test_a_transactional_producer_needs_write_on_its_transactional_id(
        node: tuple[ClusterInfo, str]) -> None:
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

    info, sasl = node
    alice = as_user("alice", sasl)
    created = raftka("topics", "--bootstrap-server", info.bootstrap_servers, "--create",
                     "--topic", "ledger", "--partitions", "1", "--replication-factor", "1")
    assert created.returncode == 0, created.stderr
    acls(info, "--add", "--allow-principal", "User:alice", "--operation", "Write",
         "--topic", "ledger")
    acls(info, "--add", "--allow-principal", "User:alice", "--consumer", "--topic", "ledger",
         "--group", "ledger-readers")
    # DESCRIBE lets alice find the coordinator; starting the producer needs WRITE.
    acls(info, "--add", "--allow-principal", "User:alice", "--operation", "Describe",
         "--transactional-id", "ledger-tx")
    wait_for(lambda: "ledger-tx" in acls(info, "--list").stdout, "the ACLs listed", 15)

    transactional = {**alice, "transactional.id": "ledger-tx"}
    with pytest.raises(KafkaException) as refused:
        Producer(transactional).init_transactions(30)
    assert refused.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED

    acls(info, "--add", "--allow-principal", "User:alice", "--operation", "Write",
         "--transactional-id", "ledger-tx")
    wait_for(lambda: "operation=WRITE" in acls(info, "--list", "--transactional-id",
                                               "ledger-tx").stdout, "WRITE listed", 15)
    producer = Producer(transactional)
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("ledger", b"aborted")
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce("ledger", b"committed")
    producer.commit_transaction(30)

    # A topic alice may describe but not write: the transaction cannot take it in.
    created = raftka("topics", "--bootstrap-server", info.bootstrap_servers, "--create",
                     "--topic", "ledger-ro", "--partitions", "1", "--replication-factor", "1")
    assert created.returncode == 0, created.stderr
    acls(info, "--add", "--allow-principal", "User:alice", "--operation", "Describe",
         "--topic", "ledger-ro")
    wait_for(lambda: "ledger-ro" in acls(info, "--list").stdout, "the ACL listed", 15)
    producer.begin_transaction()
    producer.produce("ledger-ro", b"refused")
    with pytest.raises(KafkaException) as failed:
        producer.commit_transaction(30)
    assert failed.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert failed.value.args[0].txn_requires_abort()
    # No abort here: with no partition added, librdkafka still sends EndTxn, which Kafka's
    # coordinator (and Raftka's) answers INVALID_TXN_STATE (librdkafka issue #4849).

    consumer = Consumer({**alice, "group.id": "ledger-readers", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    try:
        consumer.assign([TopicPartition("ledger", 0, 0)])
        message = wait_for(lambda: consumer.poll(0.5), "the committed record", 30)
        assert message.error() is None and message.value() == b"committed"
    finally:
        consumer.close()
