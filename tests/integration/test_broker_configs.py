"""Dynamic broker configs on a real cluster: their sources as DescribeConfigs reports them,
the legacy AlterConfigs through kafka-python's and confluent-kafka's admin clients,
`raftka configs --entity-type brokers`, and replication throttles: a partition being
reassigned moves no faster than leader.replication.throttled.rate /
follower.replication.throttled.rate allow (at least size/rate), and much faster without
them."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from cluster.testing.cluster import RaftkaCluster, start_cluster
from cluster.testing.waiting import wait_for
from clients.admin import NewTopic
from clients.protocol import ErrorCode, KafkaError
from tests.integration.quorum_helpers import produce

pytestmark = pytest.mark.slow

RATE = 512 * 1024            # bytes/s
BACKLOG = 4 * 1024 * 1024    # bytes in the partition being moved
FETCH_MAX = 256 * 1024       # replica.fetch.max.bytes: the most one fetch may overshoot by
RECORD = 32 * 1024


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RaftkaCluster]:
    with start_cluster(tmp_path_factory.mktemp("throttles"), nodes=3,
                       replica_fetch_max_bytes=FETCH_MAX) as started:
        yield started


RAFTKA = str(Path(sys.executable).with_name("raftka"))


def raftka(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([RAFTKA, *args], capture_output=True, text=True, timeout=60)


def test_describe_reports_each_source(cluster: RaftkaCluster) -> None:
    with cluster.admin() as admin:
        admin.incremental_alter_broker_configs(None, {"log.cleaner.threads": "2"})
        admin.incremental_alter_broker_configs(1, {"log.cleaner.threads": "3"})
        try:
            # As in Kafka, an alter is answered once the controller committed it; each
            # broker shows it once it applied that metadata, a moment later.
            one = wait_for(
                lambda: (d := admin.describe_broker_configs(1))[
                    "log.cleaner.threads"].source == "DYNAMIC_BROKER_CONFIG" and d,
                "broker 1 to apply its own config", 20)
            two = wait_for(
                lambda: (d := admin.describe_broker_configs(2))[
                    "log.cleaner.threads"].source == "DYNAMIC_DEFAULT_BROKER_CONFIG" and d,
                "broker 2 to apply the cluster default", 20)
            default = wait_for(lambda: admin.describe_broker_configs(None),
                               "the answering broker to apply the cluster default", 20)
        finally:
            admin.incremental_alter_broker_configs(1, {"log.cleaner.threads": None})
            admin.incremental_alter_broker_configs(None, {"log.cleaner.threads": None})
        # The deletes reach broker 1 with the next metadata it applies, a moment later.
        after = wait_for(
            lambda: (d := admin.describe_broker_configs(1, ["log.cleaner.threads"]))[
                "log.cleaner.threads"].source == "DEFAULT_CONFIG" and d,
            "broker 1 to apply the deleted configs", 20)
    threads = one["log.cleaner.threads"]
    assert (threads.value, threads.source, threads.read_only) == (
        "3", "DYNAMIC_BROKER_CONFIG", False)
    assert [(s.source, s.value) for s in threads.synonyms] == [
        ("DYNAMIC_BROKER_CONFIG", "3"), ("DYNAMIC_DEFAULT_BROKER_CONFIG", "2"),
        ("DEFAULT_CONFIG", "1")]
    assert (two["log.cleaner.threads"].value, two["log.cleaner.threads"].source) == (
        "2", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    assert one["replica.fetch.max.bytes"].source == "STATIC_BROKER_CONFIG"
    assert one["replica.fetch.max.bytes"].read_only
    assert set(default) == {"log.cleaner.threads"}
    assert (after["log.cleaner.threads"].value,
            after["log.cleaner.threads"].source) == ("1", "DEFAULT_CONFIG")


@pytest.mark.parametrize("key,value,code", [
    ("num.partitions", "3", ErrorCode.INVALID_REQUEST),         # not dynamic in Kafka
    ("leader.replication.throttled.rate", "-5", ErrorCode.INVALID_CONFIG),
    ("no.such.key", "1", ErrorCode.INVALID_CONFIG),
])
def test_bad_broker_changes_get_kafka_codes(cluster: RaftkaCluster, key: str, value: str,
                                            code: int) -> None:
    with cluster.admin() as admin, pytest.raises(KafkaError) as raised:
        admin.incremental_alter_broker_configs(2, {key: value})
    assert raised.value.code == code


def test_kafka_python_legacy_alter_configs(cluster: RaftkaCluster) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    cluster.create_topic("legacy-kp", 1, 1, config={"segment.ms": "600000"})
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        admin.alter_configs([
            ConfigResource(ConfigResourceType.TOPIC, "legacy-kp",
                           configs={"retention.ms": "7200000"}),
            ConfigResource(ConfigResourceType.BROKER, "2",
                           configs={"follower.replication.throttled.rate": "123456"})],
            incremental=False)
    finally:
        admin.close()
    with cluster.admin() as ours:
        topic = ours.describe_configs("legacy-kp")
        broker = ours.describe_broker_configs(2, ["follower.replication.throttled.rate"])
        ours.incremental_alter_broker_configs(2, {"follower.replication.throttled.rate": None})
    assert topic["retention.ms"].value == "7200000"
    # kafka-python re-sends the keys already set, as the legacy API replaces the whole set.
    assert topic["segment.ms"].value == "600000"
    assert broker["follower.replication.throttled.rate"].value == "123456"


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_confluent_legacy_alter_configs_replaces_the_set(cluster: RaftkaCluster) -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource

    cluster.create_topic("legacy-ck", 1, 1, config={"segment.ms": "600000"})
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = admin.alter_configs([ConfigResource("TOPIC", "legacy-ck",
                                                  set_config={"retention.ms": "7200000"})])
    for future in futures.values():
        future.result(timeout=30)
    bad = admin.alter_configs([ConfigResource("BROKER", "1",
                                              set_config={"num.partitions": "9"})])
    with pytest.raises(Exception, match="INVALID_REQUEST|dynamically"):
        for future in bad.values():
            future.result(timeout=30)
    with cluster.admin() as ours:
        topic = ours.describe_configs("legacy-ck")
    assert topic["retention.ms"].source == "DYNAMIC_TOPIC_CONFIG"
    assert topic["segment.ms"].source == "DEFAULT_CONFIG"  # not in the new set: removed


def test_configs_command_for_brokers(cluster: RaftkaCluster) -> None:
    server = ("--bootstrap-server", cluster.bootstrap_servers)
    altered = raftka("configs", *server, "--entity-type", "brokers", "--entity-default",
                     "--alter", "--add-config",
                     "log.cleaner.backoff.ms=20000,leader.replication.throttled.rate=1000")
    assert altered.returncode == 0, altered.stderr
    assert altered.stdout == "Completed updating default config for brokers in the cluster.\n"
    altered = raftka("configs", *server, "--entity-type", "brokers", "--entity-name", "3",
                     "--alter", "--add-config", "log.cleaner.backoff.ms=30000")
    assert altered.stdout == "Completed updating config for broker 3.\n", altered.stderr
    default = raftka("configs", *server, "--entity-type", "brokers", "--entity-default",
                     "--describe")
    assert default.stdout.splitlines() == [
        "Default configs for brokers in the cluster are:",
        "  leader.replication.throttled.rate=1000 sensitive=false "
        "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:leader.replication.throttled.rate=1000}",
        "  log.cleaner.backoff.ms=20000 sensitive=false "
        "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.backoff.ms=20000}"]
    three = raftka("configs", *server, "--entity-type", "brokers", "--entity-name", "3",
                   "--describe")
    assert three.stdout.splitlines() == [
        "Dynamic configs for broker 3 are:",
        "  log.cleaner.backoff.ms=30000 sensitive=false "
        "synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.backoff.ms=30000, "
        "DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.backoff.ms=20000, "
        "DEFAULT_CONFIG:log.cleaner.backoff.ms=15000}"]
    everything = raftka("configs", *server, "--entity-type", "brokers", "--describe")
    assert [line for line in everything.stdout.splitlines()
            if not line.startswith("  ")] == [
        "Dynamic configs for broker 1 are:", "Dynamic configs for broker 2 are:",
        "Dynamic configs for broker 3 are:", "Default configs for brokers in the cluster are:"]
    refused = raftka("configs", *server, "--entity-type", "brokers", "--entity-name", "3",
                     "--alter", "--add-config", "log.dirs=/elsewhere")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.strip().splitlines() == [
        "Error: Cannot update these configs dynamically: log.dirs"]
    for args in (("--entity-default", "--delete-config",
                  "log.cleaner.backoff.ms,leader.replication.throttled.rate"),
                 ("--entity-name", "3", "--delete-config", "log.cleaner.backoff.ms")):
        deleted = raftka("configs", *server, "--entity-type", "brokers", "--alter", *args)
        assert deleted.returncode == 0, deleted.stderr
    with cluster.admin() as admin:
        assert admin.describe_broker_configs(None) == {}


def _create_on(cluster: RaftkaCluster, topic: str, replicas: list[int]) -> None:
    with cluster.admin() as admin:
        admin.create_topics([NewTopic(topic, replica_assignments={0: replicas})])
    cluster.wait_for_isr(topic, len(replicas))
    produce(cluster.bootstrap_servers, topic, [bytes(RECORD)] * (BACKLOG // RECORD), 1)


def _reassign_seconds(cluster: RaftkaCluster, topic: str, target: list[int]) -> float:
    """Seconds from AlterPartitionReassignments until partition 0 is on `target` alone."""
    started = time.monotonic()
    with cluster.admin() as admin:
        (result,) = admin.alter_partition_reassignments({(topic, 0): target})
        assert result.error_code == ErrorCode.NONE, result.error_message
        while True:
            if not admin.list_partition_reassignments([(topic, 0)]):
                (description,) = admin.describe_topics([topic])
                if sorted(description.partitions[0].replicas) == sorted(target):
                    return time.monotonic() - started
            assert time.monotonic() - started < 120, "the reassignment never finished"
            time.sleep(0.05)


# A throttle may let one fetch past the rate: moving the backlog takes at least this long.
LOWER_BOUND_S = (BACKLOG - FETCH_MAX) / RATE


def test_unthrottled_reassignment_is_faster_than_the_bound(cluster: RaftkaCluster) -> None:
    _create_on(cluster, "moved-freely", [1, 2])
    took = _reassign_seconds(cluster, "moved-freely", [1, 3])
    assert took < LOWER_BOUND_S, f"an unthrottled move of {BACKLOG} bytes took {took:.1f} s"


def test_leader_throttle_bounds_a_reassignment(cluster: RaftkaCluster) -> None:
    topic = "moved-leader-throttled"
    _create_on(cluster, topic, [1, 2])
    with cluster.admin() as admin:
        # kafka-reassign-partitions.sh --throttle's leader side: the current replicas.
        admin.incremental_alter_configs(topic, {
            "leader.replication.throttled.replicas": "0:1,0:2"})
        for broker in (1, 2):
            admin.incremental_alter_broker_configs(broker, {
                "leader.replication.throttled.rate": str(RATE)})
    try:
        took = _reassign_seconds(cluster, topic, [1, 3])
    finally:
        with cluster.admin() as admin:
            for broker in (1, 2):
                admin.incremental_alter_broker_configs(broker, {
                    "leader.replication.throttled.rate": None})
    assert took >= LOWER_BOUND_S, f"{BACKLOG} bytes at {RATE} B/s moved in {took:.1f} s"


def test_follower_throttle_bounds_a_reassignment(cluster: RaftkaCluster) -> None:
    topic = "moved-follower-throttled"
    _create_on(cluster, topic, [2, 3])
    with cluster.admin() as admin:
        # The follower side: the replica being added.
        admin.incremental_alter_configs(topic, {
            "follower.replication.throttled.replicas": "0:1"})
        # The cluster-wide default reaches every broker.
        admin.incremental_alter_broker_configs(None, {
            "follower.replication.throttled.rate": str(RATE)})
    try:
        took = _reassign_seconds(cluster, topic, [2, 1])
    finally:
        with cluster.admin() as admin:
            admin.incremental_alter_broker_configs(None, {
                "follower.replication.throttled.rate": None})
    assert took >= LOWER_BOUND_S, f"{BACKLOG} bytes at {RATE} B/s moved in {took:.1f} s"
