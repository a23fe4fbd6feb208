"""The /metrics endpoint of a real three-node cluster, scraped over HTTP and parsed with
prometheus-client's parser: controller gauges agree across the quorum, and a real
producer and consumer group move the topic, request and lag metrics."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from cluster.testing.metrics import metrics_url, scrape, value
from tests.integration.quorum_helpers import (
    QuorumCluster,
    create_topics,
    produce,
    start_cluster,  # noqa: F401  (fixture)
    wait_for,
)

pytestmark = pytest.mark.slow

HOST = "127.0.0.1"
NODES = 3
TOPIC = "metered"
GROUP = "metered-group"
SETTINGS = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "3",
            "group.min.session.timeout.ms": "1000"}


def scrape_node(cluster: QuorumCluster, node_id: int) -> list[Any]:
    port = cluster.node(node_id).metrics_port
    assert port is not None
    return scrape(metrics_url(HOST, port))


def node_reporting(cluster: QuorumCluster, name: str, labels: dict[str, str],
                   check: Callable[[float], bool]) -> int | None:
    """The first node whose /metrics has `name{labels}` passing `check`."""
    for node_id in cluster.broker_ids:
        found = value(scrape_node(cluster, node_id), name, labels)
        if found is not None and check(found):
            return node_id
    return None


def test_controller_gauges_agree_and_one_node_is_the_active_controller(start_cluster):
    cluster: QuorumCluster = start_cluster(NODES, overrides=SETTINGS)

    def settled() -> list[list[Any]] | None:
        scrapes = [scrape_node(cluster, n) for n in cluster.controller_ids]
        active = [value(s, "kafka_controller_kafkacontroller_activecontrollercount")
                  for s in scrapes]
        registered = sum(value(s, "kafka_controller_kafkacontroller_activebrokercount") or 0
                         for s in scrapes)
        return scrapes if sorted(active) == [0, 0, 1] and registered == NODES else None

    scrapes = wait_for(settled, 30, "one active controller seeing three unfenced brokers")
    active = next(s for s in scrapes
                  if value(s, "kafka_controller_kafkacontroller_activecontrollercount") == 1)
    assert value(active, "kafka_controller_kafkacontroller_registeredbrokercount") == NODES
    assert value(active, "kafka_controller_kafkacontroller_fencedbrokercount") == 0
    assert value(active, "kafka_controller_kafkacontroller_offlinepartitionscount") == 0
    epochs = {value(s, "kafka_server_raft_metrics_current_epoch") for s in scrapes}
    assert len(epochs) == 1 and epochs.pop() >= 1  # type: ignore[operator]
    assert value(active, "kafka_controller_kafkacontroller_lastappliedrecordoffset") >= 0
    assert value(active, "raftka_metadata_last_applied_lag_offsets") is not None
    # Creating a topic shows in the active controller's counts.
    create_topics(cluster.client_port(cluster.broker_ids[0]), {TOPIC: (2, NODES)})
    wait_for(lambda: any(value(scrape_node(cluster, n),
                               "kafka_controller_kafkacontroller_globaltopiccount") == 1
                         for n in cluster.controller_ids), 15, "GlobalTopicCount 1")


def test_produce_fetch_and_group_lag_move_the_metrics(start_cluster):
    from confluent_kafka import Consumer, TopicPartition

    cluster: QuorumCluster = start_cluster(NODES, overrides=SETTINGS)
    bootstrap = cluster.info.bootstrap_servers
    create_topics(cluster.client_port(cluster.broker_ids[0]), {TOPIC: (1, NODES)})
    produce(bootstrap, TOPIC, [b"m%d" % i for i in range(10)], 1)
    leader = wait_for(lambda: node_reporting(
        cluster, "kafka_server_brokertopicmetrics_messagesin_total", {"topic": TOPIC},
        lambda v: v == 10), 15, "MessagesIn 10 on the leader")
    samples = scrape_node(cluster, leader)
    assert value(samples, "kafka_server_brokertopicmetrics_bytesin_total",
                 {"topic": TOPIC}) > 0
    assert value(samples, "kafka_network_requestmetrics_requests_total",
                 {"request": "Produce"}) >= 1
    assert value(samples, "kafka_log_log_logendoffset",
                 {"topic": TOPIC, "partition": "0"}) == 10
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "session.timeout.ms": 6000})
    try:
        consumer.subscribe([TOPIC])
        received: list[bytes] = []

        def consumed() -> bool:
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                received.append(message.value())
            return len(received) == 10

        wait_for(consumed, 30, "the group to consume the ten records")
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, 4)], asynchronous=False)
        labels = {"consumergroup": GROUP, "topic": TOPIC, "partition": "0"}
        coordinator = wait_for(lambda: node_reporting(
            cluster, "kafka_consumergroup_lag", labels, lambda v: v == 6), 15,
            "lag 6 (HW 10, committed 4) on the group's coordinator")
        samples = scrape_node(cluster, coordinator)
        assert value(samples, "kafka_consumergroup_current_offset", labels) == 4
        assert value(samples, "kafka_consumergroup_members", {"consumergroup": GROUP}) == 1
        assert value(samples, "kafka_consumergroup_state",
                     {"consumergroup": GROUP, "state": "Stable"}) == 1
        assert value(scrape_node(cluster, leader), "kafka_server_brokertopicmetrics_bytesout_total",
                     {"topic": TOPIC}) > 0
        # More records raise the lag; a commit at the end clears it.
        produce(bootstrap, TOPIC, [b"n%d" % i for i in range(5)], 1)
        wait_for(lambda: value(scrape_node(cluster, coordinator), "kafka_consumergroup_lag",
                               labels) == 11, 15, "lag 11 after five more records")
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, 15)], asynchronous=False)
        wait_for(lambda: value(scrape_node(cluster, coordinator), "kafka_consumergroup_lag",
                               labels) == 0, 15, "lag 0 after committing the end")
    finally:
        consumer.close()


def test_lag_covers_partitions_the_coordinator_holds_no_replica_of(start_cluster):
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    cluster: QuorumCluster = start_cluster(NODES, overrides=SETTINGS)
    bootstrap = cluster.info.bootstrap_servers
    create_topics(cluster.client_port(cluster.broker_ids[0]), {"near": (1, NODES)})
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                         "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition("near", 0, 0)], asynchronous=False)
        coordinator = wait_for(lambda: node_reporting(
            cluster, "kafka_consumergroup_current_offset",
            {"consumergroup": GROUP, "topic": "near"}, lambda v: v == 0), 15,
            "the group's coordinator to report its offset")
        elsewhere = next(b for b in cluster.broker_ids if b != coordinator)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("far", num_partitions=1,
                                      replica_assignment=[[elsewhere]])])["far"].result(60)
        produce(bootstrap, "far", [b"f%d" % i for i in range(10)], 1)
        consumer.commit(offsets=[TopicPartition("far", 0, 4)], asynchronous=False)
        labels = {"consumergroup": GROUP, "topic": "far", "partition": "0"}
        # The coordinator reads the leader's high watermark every 10 s.
        wait_for(lambda: value(scrape_node(cluster, coordinator), "kafka_consumergroup_lag",
                               labels) == 6, 40,
                 f"lag 6 on coordinator {coordinator} for a partition only {elsewhere} holds")
    finally:
        consumer.close()
