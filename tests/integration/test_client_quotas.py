"""Client quotas on a real one-node cluster started like scripts/bootstrap-quorum:
`raftka configs` for users, clients and their defaults, the admin client, and enforcement
seen by confluent-kafka (librdkafka): a producer over its producer_byte_rate and a consumer
over its consumer_byte_rate are slowed to their quota and told the throttle time.
DescribeTopicPartitions pages are read through the admin client."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

from clients.admin import BlockingAdmin
from clients.admin.quota_operations import QuotaFilterComponent
from clients.admin.topic_partitions_operations import describe_topic_partitions_page
from clients.protocol import ErrorCode
from tests.compat.cluster import Cluster, running_cluster
from tests.integration.test_cli_tools import raftka

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.slow

PRODUCE_QUOTA = 200_000.0
FETCH_QUOTA = 200_000.0
# A rate window of two one-second samples (Kafka's default is 11): a greedy client gets about
# one window's quota at once, then again each time a sample leaves the window, so rates are
# measured over many windows, after the first.
WINDOW_OVERRIDES = {"quota.window.num": "2", "quota.window.size.seconds": "1"}
BURST_S = 3.0
MEASURE_S = 10.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("quotas"), nodes=1,
                         overrides=WINDOW_OVERRIDES) as started:
        yield started


def configs(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return raftka("configs", "--bootstrap-server", cluster.bootstrap, *args)


def ok(result: subprocess.CompletedProcess[str]) -> list[str]:
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def one_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


def test_configs_alters_and_describes_quotas_of_users_clients_and_defaults(
        cluster: Cluster) -> None:
    assert ok(configs(cluster, "--alter", "--entity-type", "users", "--entity-name", "alice",
                      "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048")) == [
        "Completed updating config for user-principal 'alice'."]
    ok(configs(cluster, "--alter", "--entity-type", "clients", "--entity-default",
               "--add-config", "request_percentage=50.5"))
    ok(configs(cluster, "--alter", "--entity-type", "users", "--entity-name", "alice",
               "--entity-type", "clients", "--entity-name", "app",
               "--add-config", "producer_byte_rate=4096"))
    assert ok(configs(cluster, "--describe", "--entity-type", "users", "--entity-name",
                      "alice")) == [
        "Quota configs for user-principal 'alice' are consumer_byte_rate=2048.0, "
        "producer_byte_rate=1024.0"]
    assert ok(configs(cluster, "--describe", "--entity-type", "clients",
                      "--entity-default")) == [
        "Quota configs for the default client-id are request_percentage=50.5"]
    assert ok(configs(cluster, "--describe", "--entity-type", "users", "--entity-name", "alice",
                      "--entity-type", "clients", "--entity-name", "app")) == [
        "Quota configs for user-principal 'alice', client-id 'app' are "
        "producer_byte_rate=4096.0"]
    ok(configs(cluster, "--alter", "--entity-type", "users", "--entity-name", "alice",
               "--delete-config", "producer_byte_rate"))
    assert ok(configs(cluster, "--describe", "--entity-type", "users", "--entity-name",
                      "alice")) == [
        "Quota configs for user-principal 'alice' are consumer_byte_rate=2048.0"]
    # Clean up for the other tests of the module.
    for args in (["--entity-type", "users", "--entity-name", "alice", "--delete-config",
                  "consumer_byte_rate"],
                 ["--entity-type", "clients", "--entity-default", "--delete-config",
                  "request_percentage"],
                 ["--entity-type", "users", "--entity-name", "alice", "--entity-type",
                  "clients", "--entity-name", "app", "--delete-config", "producer_byte_rate"]):
        ok(configs(cluster, "--alter", *args))
    assert ok(configs(cluster, "--describe", "--entity-type", "clients")) == []


def test_configs_rejects_bad_quotas_with_one_line(cluster: Cluster) -> None:
    assert "unknown quota key 'bogus_rate'" in one_error(configs(
        cluster, "--alter", "--entity-type", "clients", "--entity-name", "c",
        "--add-config", "producer_byte_rate=5,bogus_rate=1"))
    assert "must be a positive number" in one_error(configs(
        cluster, "--alter", "--entity-type", "clients", "--entity-name", "c",
        "--add-config", "producer_byte_rate=-5"))
    assert "must be a Long value" in one_error(configs(
        cluster, "--alter", "--entity-type", "users", "--entity-name", "u",
        "--add-config", "consumer_byte_rate=10.5"))
    assert "needs an --entity-name or --entity-default" in one_error(configs(
        cluster, "--alter", "--entity-type", "users", "--entity-type", "clients",
        "--entity-name", "c", "--add-config", "producer_byte_rate=5"))


def test_admin_client_alters_and_filters_quotas(cluster: Cluster) -> None:
    with BlockingAdmin({"bootstrap.servers": cluster.bootstrap}) as admin:
        results = admin.alter_client_quotas([
            ({"user": None}, {"producer_byte_rate": 10_000}),
            ({"user": "bob", "client-id": None}, {"consumer_byte_rate": 20_000}),
            ({"group": "g"}, {"producer_byte_rate": 1})])
        assert [r.error_code for r in results] == [0, 0, ErrorCode.INVALID_REQUEST]
        assert "Unhandled client quota entity type: group" in results[2].error_message
        assert admin.describe_client_quotas([QuotaFilterComponent.of_any("user")]) == {
            (("user", None),): {"producer_byte_rate": 10_000.0},
            (("client-id", None), ("user", "bob")): {"consumer_byte_rate": 20_000.0}}
        assert admin.describe_client_quotas([QuotaFilterComponent.of_default("user")],
                                            strict=True) == {
            (("user", None),): {"producer_byte_rate": 10_000.0}}
        admin.alter_client_quotas([({"user": None}, {"producer_byte_rate": None}),
                                   ({"user": "bob", "client-id": None},
                                    {"consumer_byte_rate": None})])
        assert admin.describe_client_quotas() == {}


def _set_quota(cluster: Cluster, client_id: str, key: str, value: float) -> None:
    ok(configs(cluster, "--alter", "--entity-type", "clients", "--entity-name", client_id,
               "--add-config", f"{key}={int(value)}"))


def _stats_throttle(stats: list[str]) -> int:
    """The largest per-broker `throttle` max librdkafka reported, in ms."""
    worst = 0
    for text in stats:
        for broker in json.loads(text)["brokers"].values():
            worst = max(worst, int(broker.get("throttle", {}).get("max", 0)))
    return worst


def _rate_after_burst(times_and_sizes: list[tuple[float, int]], start: float) -> float:
    """Bytes per second between the end of the burst and the end of the measurement."""
    begin, end = start + BURST_S, start + BURST_S + MEASURE_S
    return sum(n for t, n in times_and_sizes if begin <= t < end) / MEASURE_S


def test_a_producer_over_its_byte_rate_is_slowed_to_the_quota(cluster: Cluster) -> None:
    topic, client_id = "quota-produce", "quota-producer"
    cluster.create_topic(topic)
    _set_quota(cluster, client_id, "producer_byte_rate", PRODUCE_QUOTA)
    throttles: list[float] = []
    stats: list[str] = []
    producer = confluent_kafka.Producer({
        "bootstrap.servers": cluster.bootstrap, "client.id": client_id, "acks": 1,
        "linger.ms": 5, "batch.size": 16384, "max.in.flight.requests.per.connection": 5,
        # A short local queue: the producer blocks on the broker's pace, not on a backlog.
        "queue.buffering.max.kbytes": 128,
        "statistics.interval.ms": 500, "stats_cb": stats.append,
        "throttle_cb": lambda event: throttles.append(event.throttle_time),
        "broker.address.family": "v4"})
    delivered: list[tuple[float, int]] = []
    errors: list[object] = []

    def on_delivery(err, msg) -> None:  # type: ignore[no-untyped-def]
        if err is not None:
            errors.append(err)
        else:
            delivered.append((time.monotonic(), len(msg.value())))

    value = b"x" * 1000
    start = time.monotonic()
    while time.monotonic() < start + BURST_S + MEASURE_S:
        try:
            producer.produce(topic, value, on_delivery=on_delivery)
        except BufferError:
            producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(30) == 0
    assert not errors
    rate = _rate_after_burst(delivered, start)
    assert 0.8 * PRODUCE_QUOTA <= rate <= 1.2 * PRODUCE_QUOTA, rate
    assert throttles and max(throttles) > 0
    assert _stats_throttle(stats) > 0


def test_a_consumer_over_its_byte_rate_is_slowed_to_the_quota(cluster: Cluster) -> None:
    topic, client_id = "quota-fetch", "quota-consumer"
    cluster.create_topic(topic)
    # Batches small against the quota window: a fetch returns at least one whole batch.
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap,
                                         "linger.ms": 20, "batch.size": 16384,
                                         "broker.address.family": "v4"})
    value = b"y" * 1000
    total = int(FETCH_QUOTA * (BURST_S + MEASURE_S + 10) / len(value))
    for _ in range(total):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0
    _set_quota(cluster, client_id, "consumer_byte_rate", FETCH_QUOTA)
    throttles: list[float] = []
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": cluster.bootstrap, "client.id": client_id,
        "group.id": "quota-group", "auto.offset.reset": "earliest",
        "fetch.max.bytes": 32768, "max.partition.fetch.bytes": 32768,
        "message.max.bytes": 32768,
        "throttle_cb": lambda event: throttles.append(event.throttle_time),
        "broker.address.family": "v4"})
    consumer.subscribe([topic])
    received: list[tuple[float, int]] = []
    start = None
    try:
        deadline = time.monotonic() + 60
        while start is None or time.monotonic() < start + BURST_S + MEASURE_S:
            assert time.monotonic() < deadline, "the consumer received nothing"
            msg = consumer.poll(0.2)
            if msg is None or msg.error():
                continue
            if start is None:
                start = time.monotonic()
            received.append((time.monotonic(), len(msg.value())))
    finally:
        consumer.close()
    rate = _rate_after_burst(received, start)
    assert 0.8 * FETCH_QUOTA <= rate <= 1.2 * FETCH_QUOTA, rate
    assert throttles and max(throttles) > 0


def test_describe_topic_partitions_pages_across_topics(cluster: Cluster) -> None:
    cluster.create_topic("pages-a", partitions=3)
    cluster.create_topic("pages-b", partitions=2)
    with BlockingAdmin({"bootstrap.servers": cluster.bootstrap}) as admin:
        first = admin._run(describe_topic_partitions_page(["pages-b", "pages-a"], 2))
        assert [(t["name"], [p["partition_index"] for p in t["partitions"]])
                for t in first["topics"]] == [("pages-a", [0, 1])]
        assert first["next_cursor"] == {"topic_name": "pages-a", "partition_index": 2}
        described = admin.describe_topic_partitions(["pages-a", "pages-b"], partition_limit=2)
        assert {n: [p.partition for p in d.partitions] for n, d in described.items()} == {
            "pages-a": [0, 1, 2], "pages-b": [0, 1]}
        assert all(p.leader == 1 for d in described.values() for p in d.partitions)


def test_kafka_python_pages_describe_topic_partitions(cluster: Cluster) -> None:
    kafka_admin = pytest.importorskip("kafka.admin")
    cluster.create_topic("kp-pages-a", partitions=3)
    cluster.create_topic("kp-pages-b", partitions=2)
    admin = kafka_admin.KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        pages, cursor = [], None
        while True:
            page = admin.describe_topic_partitions(["kp-pages-b", "kp-pages-a"],
                                                   response_partition_limit=2, cursor=cursor)
            pages.append([(t["name"], [p["partition_index"] for p in t["partitions"]])
                          for t in page["topics"]])
            cursor = page["next_cursor"]
            if cursor is None:
                break
        unknown = admin.describe_topic_partitions(["kp-missing"])["topics"]
    finally:
        admin.close()
    assert pages == [[("kp-pages-a", [0, 1])], [("kp-pages-a", [2]), ("kp-pages-b", [0])],
                     [("kp-pages-b", [1])]]
    assert [t["error_code"] for t in unknown] == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
