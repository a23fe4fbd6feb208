"""Fetching from the closest replica (KIP-392) on a real three-node cluster: each node in
its own `broker.rack`, the rack-aware `replica.selector.class`; Raftka's consumer and
librdkafka with `client.rack` read a follower's rack and their records come from that
follower, as the brokers' BytesOut metrics show."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import confluent_kafka
import pytest

from cluster.testing import RaftkaCluster
from cluster.testing.cluster import start_cluster
from cluster.testing.metrics import scrape, value
from cluster.testing.waiting import wait_for
from clients.consumer import BlockingConsumer
from clients.net import BlockingKafkaConnection
from clients.producer import BlockingProducer
from clients.protocol import ApiKey, ErrorCode

pytestmark = pytest.mark.slow

NODES = (1, 2, 3)
RECORDS = 50
SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RaftkaCluster]:
    started = start_cluster(tmp_path_factory.mktemp("racks"), len(NODES),
                            node_config={n: {"broker.rack": f"rack-{n}"} for n in NODES},
                            replica_selector_class=SELECTOR)
    try:
        yield started
    finally:
        started.close()


def fill(cluster: RaftkaCluster, topic: str) -> tuple[int, int]:
    """Create `topic` (one partition on every node), write RECORDS; (leader, a follower)."""
    cluster.create_topic(topic, 1, len(NODES))
    with BlockingProducer({"bootstrap.servers": cluster.bootstrap_servers,
                           "acks": "all"}) as producer:
        for i in range(RECORDS):
            producer.send(topic, b"v%d" % i, partition=0)
        producer.flush()
    with cluster.admin() as admin:
        (partition,) = admin.describe_topics([topic])[0].partitions
    follower = next(n for n in partition.replicas if n != partition.leader)
    return partition.leader, follower


def bytes_out(cluster: RaftkaCluster, node: int, topic: str) -> float:
    """Record bytes node `node` returned to consumers fetching `topic`."""
    found = value(scrape(cluster.metrics_url(node)),
                  "kafka_server_brokertopicmetrics_bytesout_total", {"topic": topic})
    return found or 0.0


def assert_read_from(cluster: RaftkaCluster, topic: str, follower: int) -> None:
    assert bytes_out(cluster, follower, topic) > 0
    for other in NODES:
        if other != follower:
            # The leader only named the follower; it never sent the records itself.
            assert bytes_out(cluster, other, topic) == 0, other


def test_a_raftka_consumer_reads_from_the_follower_in_its_rack(cluster: RaftkaCluster) -> None:
    leader, follower = fill(cluster, "near-raftka")
    got: list[bytes] = []
    with BlockingConsumer({"bootstrap.servers": cluster.bootstrap_servers,
                           "client.rack": f"rack-{follower}"}) as consumer:
        consumer.assign([("near-raftka", 0)])
        consumer.seek(("near-raftka", 0), 0)

        def all_read() -> bool:
            got.extend(r.value for r in consumer.poll(200))
            return len(got) >= RECORDS
        wait_for(all_read, f"{RECORDS} records from rack-{follower}", 30)
    assert got == [b"v%d" % i for i in range(RECORDS)]
    assert_read_from(cluster, "near-raftka", follower)


def test_a_confluent_kafka_consumer_reads_from_the_follower_in_its_rack(
        cluster: RaftkaCluster) -> None:
    leader, follower = fill(cluster, "near-librdkafka")
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": cluster.bootstrap_servers, "group.id": "near-librdkafka",
        "client.rack": f"rack-{follower}", "enable.auto.commit": False,
        "auto.offset.reset": "earliest"})
    got: list[bytes] = []
    try:
        consumer.assign([confluent_kafka.TopicPartition("near-librdkafka", 0, 0)])

        def all_read() -> bool:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                got.append(message.value())
            return len(got) >= RECORDS
        wait_for(all_read, f"{RECORDS} records through librdkafka", 30, interval=0)
    finally:
        consumer.close()
    assert got == [b"v%d" % i for i in range(RECORDS)]
    assert_read_from(cluster, "near-librdkafka", follower)


def test_a_follower_serves_client_metadata_fetches_up_to_its_high_watermark(
        cluster: RaftkaCluster) -> None:
    leader, follower = fill(cluster, "follower-hw")
    node = cluster.info.node(follower)
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
            "forgotten_topics_data": [], "topics": [{"topic": "follower-hw", "partitions": [
                {"partition": 0, "fetch_offset": 0, "log_start_offset": -1,
                 "partition_max_bytes": 1 << 20}]}]}
    assert node.client_port is not None
    with BlockingKafkaConnection(node.host, node.client_port, client_id="test",
                                 timeout=10) as conn:
        def answer(version: int) -> dict:
            return conn.request(ApiKey.FETCH, body, version=version)["responses"][0][
                "partitions"][0]
        # The follower learns the HW from its next fetch from the leader.
        served = wait_for(lambda: (a := answer(11))["high_watermark"] == RECORDS and a,
                          "the follower's HW to reach the records written", 15)
        assert served["error_code"] == 0 and len(served["records"]) > 0
        assert answer(10)["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
