"""ACLs on a real 3-node cluster started like scripts/bootstrap-quorum with the
StandardAuthorizer on. Plaintext clients are User:ANONYMOUS; with
allow.everyone.if.no.acl.found the cluster (and the brokers' own traffic) stays open while
ACLs granted to another principal, or DENY ACLs, close single topics and groups to
ANONYMOUS. ACLs are managed with `raftka acls` and confluent-kafka's admin client, and
confluent-kafka and kafka-python see Kafka's authorization errors."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from cluster.launcher import ClusterInfo, stop_quorum
from cluster.launcher.ports import bootstrap_on_free_ports
from cluster.testing.waiting import wait_for
from clients.net import BlockingKafkaConnection
from clients.protocol import ApiKey, ErrorCode
from tests.integration.quorum_helpers import CONSUMER, produce
from tests.integration.quorum_helpers import start_cluster  # noqa: F401  (fixture)
from tests.integration.test_cli_tools import raftka

pytestmark = pytest.mark.slow

SETTINGS = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found": "true",
            "super.users": "User:admin",
            "group.initial.rebalance.delay.ms": "0",
            "group.min.session.timeout.ms": "1000"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterInfo]:
    info = bootstrap_on_free_ports(tmp_path_factory.mktemp("acl-cluster"), nodes=3,
                                   overrides=SETTINGS, timeout=90)
    try:
        yield info
    finally:
        stop_quorum(info.dir)


def acls(cluster: ClusterInfo, *args: str) -> subprocess.CompletedProcess[str]:
    result = raftka("acls", "--bootstrap-server", cluster.bootstrap_servers, *args)
    assert result.returncode == 0, result.stderr
    return result


def create_topic(cluster: ClusterInfo, name: str) -> None:
    created = raftka("topics", "--bootstrap-server", cluster.bootstrap_servers, "--create",
                     "--topic", name, "--partitions", "2", "--replication-factor", "3")
    assert created.returncode == 0, created.stderr


def produce_error(servers: str, topic: str) -> int | None:
    """The error code confluent-kafka's producer reports for one record (None: delivered)."""
    from confluent_kafka import Producer

    reports: list[object] = []
    producer = Producer({"bootstrap.servers": servers, "message.timeout.ms": 10000})
    producer.produce(topic, value=b"v", on_delivery=lambda err, msg: reports.append(err))
    producer.flush(20)
    assert len(reports) == 1
    return None if reports[0] is None else reports[0].code()  # type: ignore[attr-defined]


def consume_error(servers: str, topic: str, group: str) -> int | None:
    """The first error confluent-kafka's consumer reports in `group` (None: got a record)."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": servers, "group.id": group, **CONSUMER})
    consumer.subscribe([topic])
    try:
        def polled() -> object | None:
            msg = consumer.poll(0.5)
            return None if msg is None else msg
        msg = wait_for(polled, "a record or an error", 30)
        return None if msg.error() is None else msg.error().code()  # type: ignore[attr-defined]
    finally:
        consumer.close()


def test_cli_adds_lists_and_removes_acls_in_kafka_format(cluster: ClusterInfo) -> None:
    added = acls(cluster, "--add", "--allow-principal", "User:alice", "--operation", "Read",
                 "--operation", "Describe", "--topic", "cli-orders")
    pattern = "ResourcePattern(resourceType=TOPIC, name=cli-orders, patternType=LITERAL)"
    assert added.stdout == (
        f"Adding ACLs for resource `{pattern}`: \n"
        " \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n"
        "\t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW) \n\n")

    def listed() -> str | None:
        out = acls(cluster, "--list", "--topic", "cli-orders").stdout
        return out if "READ" in out else None
    out = wait_for(listed, "the new ACLs in --list", 15)
    assert out.startswith(f"Current ACLs for resource `{pattern}`: \n")
    assert "(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)" in out

    by_principal = acls(cluster, "--list", "--principal", "User:alice").stdout
    assert by_principal.startswith("ACLs for principal `User:alice`\n")
    assert pattern in by_principal

    acls(cluster, "--remove", "--force", "--allow-principal", "User:alice", "--operation", "Read",
         "--topic", "cli-orders")
    wait_for(lambda: "READ" not in acls(cluster, "--list", "--topic", "cli-orders").stdout,
             "READ removed", 15)
    assert "DESCRIBE" in acls(cluster, "--list", "--topic", "cli-orders").stdout
    acls(cluster, "--remove", "--force", "--topic", "cli-orders")
    wait_for(lambda: acls(cluster, "--list", "--topic", "cli-orders").stdout == "",
             "every ACL of cli-orders removed", 15)


def test_cli_refuses_bad_input_in_one_line(cluster: ClusterInfo) -> None:
    bad_op = raftka("acls", "--bootstrap-server", cluster.bootstrap_servers, "--add",
                    "--allow-principal", "User:a", "--operation", "Fly", "--topic", "t")
    assert bad_op.returncode == 1 and bad_op.stderr.strip() == \
        "Error while executing ACL command: Invalid operation: Fly"
    wrong_op = raftka("acls", "--bootstrap-server", cluster.bootstrap_servers, "--add",
                      "--allow-principal", "User:a", "--operation", "IdempotentWrite",
                      "--group", "g")
    assert wrong_op.returncode == 1
    assert "ResourceType GROUP only supports operations" in wrong_op.stderr
    match_add = raftka("acls", "--bootstrap-server", cluster.bootstrap_servers, "--add",
                       "--allow-principal", "User:a", "--topic", "t",
                       "--resource-pattern-type", "match")
    assert match_add.returncode == 1 and len(match_add.stderr.strip().splitlines()) == 1


def test_topic_acls_for_another_principal_close_the_topic_to_anonymous(cluster: ClusterInfo) -> None:
    from confluent_kafka import KafkaError
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import TopicAuthorizationFailedError

    servers = cluster.bootstrap_servers
    create_topic(cluster, "secret")
    produce(servers, "secret", [b"before"], 2)
    assert produce_error(servers, "secret") is None

    acls(cluster, "--add", "--allow-principal", "User:alice", "--producer", "--consumer",
         "--topic", "secret", "--group", "secret-readers")
    wait_for(lambda: produce_error(servers, "secret") == KafkaError.TOPIC_AUTHORIZATION_FAILED,
             "confluent-kafka's produce refused with TOPIC_AUTHORIZATION_FAILED", 30)
    assert consume_error(servers, "secret", f"g-{uuid.uuid4()}") in (
        KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED)

    # Metadata of all topics leaves it out; asked for by name, it is refused.
    from confluent_kafka.admin import AdminClient
    listed = AdminClient({"bootstrap.servers": servers}).list_topics(timeout=10)
    assert "secret" not in listed.topics
    consumer = KafkaConsumer(bootstrap_servers=servers)
    try:
        assert "secret" not in consumer.topics()
    finally:
        consumer.close()
    producer = KafkaProducer(bootstrap_servers=servers, max_block_ms=5000)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("secret", b"x").get(timeout=10)
    finally:
        producer.close()

    # The consumer group protocol refuses a subscription to a topic it may not describe.
    host, port = servers.split(",")[0].rsplit(":", 1)
    with BlockingKafkaConnection(host, int(port)) as conn:
        refused = conn.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, {
            "group_id": f"g-{uuid.uuid4()}", "member_id": uuid.uuid4().hex, "member_epoch": 0,
            "instance_id": None, "rack_id": None, "rebalance_timeout_ms": 5000,
            "subscribed_topic_names": ["secret"], "subscribed_topic_regex": None,
            "server_assignor": None, "topic_partitions": []}, 1)
    assert refused["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED

    acls(cluster, "--remove", "--force", "--topic", "secret")
    wait_for(lambda: produce_error(servers, "secret") is None,
             "produce allowed again once the ACLs are gone", 30)


def test_group_acl_refuses_anonymous_with_group_authorization_failed(cluster: ClusterInfo) -> None:
    from confluent_kafka import KafkaError

    servers = cluster.bootstrap_servers
    create_topic(cluster, "open-topic")
    produce(servers, "open-topic", [b"a", b"b"], 2)
    acls(cluster, "--add", "--allow-principal", "User:alice", "--operation", "Read",
         "--group", "locked")
    wait_for(lambda: "locked" in acls(cluster, "--list", "--group", "locked").stdout,
             "the group ACL listed", 15)
    assert consume_error(servers, "open-topic", "locked") == KafkaError.GROUP_AUTHORIZATION_FAILED
    assert consume_error(servers, "open-topic", "unlocked") is None

    from confluent_kafka.admin import AclOperation, AdminClient
    admin = AdminClient({"bootstrap.servers": servers})
    described = admin.describe_consumer_groups(["unlocked", "locked"],
                                               include_authorized_operations=True)
    unlocked = described["unlocked"].result(timeout=15)
    # No ACL covers it, so allow.everyone.if.no.acl.found grants every group operation.
    assert set(unlocked.authorized_operations) == {
        AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE,
        AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
    with pytest.raises(Exception, match="GROUP_AUTHORIZATION_FAILED"):
        described["locked"].result(timeout=15)


def test_prefixed_deny_beats_the_default_allow(cluster: ClusterInfo) -> None:
    from confluent_kafka import KafkaError

    servers = cluster.bootstrap_servers
    create_topic(cluster, "logs-app")
    create_topic(cluster, "logbook")
    acls(cluster, "--add", "--deny-principal", "User:ANONYMOUS", "--operation", "Write",
         "--topic", "logs-", "--resource-pattern-type", "prefixed")
    wait_for(lambda: produce_error(servers, "logs-app") == KafkaError.TOPIC_AUTHORIZATION_FAILED,
             "produce to logs-app refused", 30)
    assert produce_error(servers, "logbook") is None
    matched = acls(cluster, "--list", "--topic", "logs-app", "--resource-pattern-type", "match")
    assert "name=logs-, patternType=PREFIXED" in matched.stdout


def test_confluent_admin_creates_describes_and_deletes_acls(cluster: ClusterInfo) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    binding = AclBinding(ResourceType.TOPIC, "admin-made", ResourcePatternType.PREFIXED,
                         "User:bob", "*", AclOperation.WRITE, AclPermissionType.ALLOW)
    for future in admin.create_acls([binding]).values():
        future.result(timeout=15)
    any_bob = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:bob",
                               None, AclOperation.ANY, AclPermissionType.ANY)
    described = wait_for(lambda: admin.describe_acls(any_bob).result(timeout=15) or None,
                         "bob's ACL described", 15)
    assert described == [binding]
    deleted = admin.delete_acls([any_bob])
    assert [list(f.result(timeout=15)) for f in deleted.values()] == [[binding]]
    wait_for(lambda: admin.describe_acls(any_bob).result(timeout=15) == [],
             "bob's ACL gone", 15)


def test_acls_survive_a_kill_and_restart_through_snapshots(start_cluster) -> None:  # noqa: F811
    """A 1-node cluster snapshotting every few records: the ACL comes back from the metadata
    snapshot and log after kill -9 and is enforced again."""
    from confluent_kafka import KafkaError

    from tests.integration.test_quorum_snapshot import SNAPSHOT_FILE_NAME, read_snapshot

    cluster = start_cluster(nodes=1, overrides={**SETTINGS,
                                                "metadata.log.max.snapshot.interval": "2"})
    info = cluster.info
    create_topic_rf1(info, "kept")
    create_topic_rf1(info, "open-after-restart")
    acls(info, "--add", "--deny-principal", "User:ANONYMOUS", "--operation", "Write",
         "--topic", "kept")
    wait_for(lambda: produce_error(info.bootstrap_servers, "kept")
             == KafkaError.TOPIC_AUTHORIZATION_FAILED, "produce refused before the restart", 30)
    snapshot = cluster.metadata_dir(1) / SNAPSHOT_FILE_NAME

    def snapshot_acls() -> list | None:
        create_topic_rf1(info, f"filler-{uuid.uuid4().hex[:8]}")  # more records to snapshot
        taken = read_snapshot(snapshot)
        return None if taken is None or not len(taken[1].acls) else list(taken[1].acls)
    (kept,) = wait_for(snapshot_acls, "the ACL in a metadata snapshot", 60)
    assert (kept.resource_name, kept.principal) == ("kept", "User:ANONYMOUS")
    cluster.kill(1)
    cluster.restart(1)
    listed = acls(info, "--list", "--topic", "kept").stdout
    assert "(principal=User:ANONYMOUS, host=*, operation=WRITE, permissionType=DENY)" in listed
    assert produce_error(info.bootstrap_servers, "kept") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert produce_error(info.bootstrap_servers, "open-after-restart") is None


def create_topic_rf1(info: ClusterInfo, name: str) -> None:
    created = raftka("topics", "--bootstrap-server", info.bootstrap_servers, "--create",
                     "--topic", name, "--partitions", "1", "--replication-factor", "1")
    assert created.returncode == 0, created.stderr
