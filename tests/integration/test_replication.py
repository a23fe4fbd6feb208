"""Replication with real node processes: leader kills under an idempotent acks=all producer,
min.insync.replicas with brokers down, and a paused follower leaving and rejoining the ISR."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from cluster.launcher import start_node
from cluster.testing.metrics import metrics_url, scrape, value
from clients.protocol.errors import ErrorCode
from tests.integration.quorum_helpers import (
    HOST,
    PartitionView,
    QuorumCluster,
    create_topics,
    listed_brokers,
    log_end_offset,
    metadata,
    partition_views,
    produce_record as produce,
    start_cluster,  # noqa: F401  (fixture)
    wait_for,
)

pytestmark = pytest.mark.slow


def views(cluster: QuorumCluster, node_ids: list[int]) -> dict[tuple[str, int], PartitionView]:
    """Partition views from the first of `node_ids` that answers Metadata."""
    for node_id in node_ids:
        response = metadata(cluster.client_port(node_id), timeout=2.0)
        if response is not None:
            return partition_views(response)
    return {}


# -- 1. no acknowledged record lost, none duplicated --------------------------------------

PRODUCER = textwrap.dedent("""
    import sys, os, confluent_kafka
    bootstrap, topic, partitions, stop_file, acked_file = sys.argv[1:6]
    partitions = int(partitions)
    out = open(acked_file, "w", buffering=1)
    errors = []
    def delivered(err, msg):
        if err is None:
            out.write(f"{msg.partition()} {msg.offset()} {msg.value().decode()}\\n")
        else:
            errors.append(str(err))
    producer = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
        "linger.ms": 5, "message.timeout.ms": 180000, "retry.backoff.ms": 50,
        "topic.metadata.refresh.interval.ms": 1000})
    number = 0
    while not os.path.exists(stop_file):
        for _ in range(200):
            try:
                producer.produce(topic, value=str(number).encode(),
                                 partition=number % partitions, on_delivery=delivered)
                number += 1
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    remaining = producer.flush(180)
    print(f"sent {number} unflushed {remaining} errors {len(errors)} {errors[:3]}")
""")


def read_partitions(bootstrap: str, topic: str, partitions: int) -> dict[int, list[tuple[int, int]]]:
    """(offset, number) of every record of every partition, up to its high watermark."""
    import confluent_kafka

    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "verify",
                                         "enable.auto.commit": False})
    try:
        ends = {p: consumer.get_watermark_offsets(confluent_kafka.TopicPartition(topic, p),
                                                  timeout=10)[1] for p in range(partitions)}
        consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in range(partitions)])
        found: dict[int, list[tuple[int, int]]] = {p: [] for p in range(partitions)}
        remaining = {p for p in range(partitions) if ends[p] > 0}
        deadline = time.monotonic() + 120
        while remaining and time.monotonic() < deadline:
            for message in consumer.consume(10_000, timeout=1.0):
                if message.error() is not None:
                    continue
                p = message.partition()
                found[p].append((message.offset(), int(message.value())))
                if message.offset() + 1 >= ends[p]:
                    remaining.discard(p)
        assert not remaining, f"could not read partitions {remaining} to their ends {ends}"
        return found
    finally:
        consumer.close()


def has_full_isrs(cluster: QuorumCluster, partitions: int) -> bool:
    """Whether the running nodes see `partitions` partitions, each with a leader and 3 in ISR."""
    current = views(cluster, [n for n in cluster.broker_ids if cluster.is_running(n)])
    return len(current) == partitions and all(
        len(v.isr) == 3 and v.leader >= 0 for v in current.values())


def replicated_topic(cluster: QuorumCluster, topic: str, partitions: int
                     ) -> tuple[dict[int, int], str]:
    """Create `topic` with RF 3 and min.insync.replicas 2 and wait for full ISRs; the nodes'
    client ports and the bootstrap string."""
    ports = {n: cluster.client_port(n) for n in cluster.broker_ids}
    create_topics(ports[1], {topic: (partitions, 3)}, configs={"min.insync.replicas": "2"})
    wait_for(lambda: has_full_isrs(cluster, partitions), 30, "full ISRs", details=cluster.logs)
    return ports, ",".join(f"{HOST}:{p}" for p in ports.values())


def test_no_acknowledged_record_is_lost_or_duplicated_across_leader_kills(
        start_cluster: Callable[..., QuorumCluster], tmp_path: Path) -> None:
    cluster = start_cluster(3)
    topic, partitions = "numbered", 6
    ports, bootstrap = replicated_topic(cluster, topic, partitions)
    all_nodes = list(cluster.broker_ids)
    stop_file, acked_file = tmp_path / "stop", tmp_path / "acked"
    producer = subprocess.Popen(
        [sys.executable, "-c", PRODUCER, bootstrap, topic, str(partitions), str(stop_file),
         str(acked_file)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        wait_for(lambda: acked_file.exists() and acked_file.stat().st_size > 10_000, 30,
                 "the producer's first acknowledgements")
        for round_no in range(3):
            leader = views(cluster, all_nodes)[(topic, 0)].leader
            victims = [leader]
            if round_no == 1:
                # The active controller dies too (in the same kill when it leads partition 0).
                controller = wait_for(lambda: cluster.quorum_leader(), 30,
                                      "the active controller", details=cluster.logs)
                if controller != leader:
                    victims.append(controller)
            for victim in victims:
                cluster.kill(victim)
            if round_no == 1:
                assert controller in victims and not cluster.is_running(controller), (
                    f"active controller {controller} was not killed")
            size = acked_file.stat().st_size
            if len(victims) == 1:
                # The survivors elect a new leader and acknowledged writes continue.
                wait_for(lambda: acked_file.stat().st_size > size + 10_000, 60,
                         f"acks to resume after killing node {leader}", details=cluster.logs)
                cluster.restart(leader)
            else:
                cluster.start_nodes(victims)
            wait_for(lambda: has_full_isrs(cluster, partitions), 60,
                     f"full ISRs after round {round_no}", details=cluster.logs)
        stop_file.touch()
        output, _ = producer.communicate(timeout=200)
    finally:
        if producer.poll() is None:
            producer.kill()
            producer.wait()
    assert producer.returncode == 0, output
    acked: dict[int, int] = {}
    for line in acked_file.read_text().splitlines():
        partition, offset, number = map(int, line.split())
        assert number % partitions == partition
        acked[number] = offset
    assert len(acked) > 10_000, output
    log = read_partitions(bootstrap, topic, partitions)
    numbers = [n for records in log.values() for _, n in records]
    assert len(numbers) == len(set(numbers)), "duplicates in the log"
    where = {n: o for records in log.values() for o, n in records}
    missing = [n for n in acked if n not in where]
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:5]}"
    assert all(where[n] == o for n, o in acked.items()), "an ack named another offset"
    for records in log.values():
        in_log = [n for _, n in records]
        assert in_log == sorted(in_log), "a partition is out of order"


# -- 3. min.insync.replicas -----------------------------------------------------------------

def test_acks_all_needs_min_insync_replicas_and_resumes_when_a_broker_returns(
        start_cluster: Callable[..., QuorumCluster]) -> None:
    cluster = start_cluster(3, controllers=1)
    brokers = cluster.broker_ids
    topic = "guarded"
    create_topics(cluster.client_port(brokers[0]), {topic: (1, 3)},
                  configs={"min.insync.replicas": "2"})
    view = wait_for(lambda: (v := views(cluster, brokers).get((topic, 0))) and len(v.isr) == 3
                    and v, 30, "a full ISR")
    leader = view.leader
    port = cluster.client_port(leader)
    assert produce(port, topic, b"before")["error_code"] == 0  # type: ignore[index]
    others = [b for b in brokers if b != leader]
    for broker in others:
        cluster.kill(broker)
    wait_for(lambda: views(cluster, [leader]).get((topic, 0), view).isr == (leader,), 30,
             "the ISR to shrink to the leader", details=cluster.logs)
    end = log_end_offset(port, topic)
    answer = produce(port, topic, b"refused")
    assert answer is not None and answer["error_code"] == ErrorCode.NOT_ENOUGH_REPLICAS
    assert log_end_offset(port, topic) == end == 1, "a refused record was appended"
    # Not kraft-ready while the other broker stays down: ready once it serves Metadata.
    start_node(cluster.dir, others[0],
               ready=lambda _, node: metadata(node.client_port, timeout=1.0) is not None)
    wait_for(lambda: len(views(cluster, [leader]).get((topic, 0), view).isr) == 2, 30,
             "the restarted broker to rejoin the ISR", details=cluster.logs)
    answer = produce(port, topic, b"after")
    assert answer is not None and answer["error_code"] == 0, answer
    assert answer["base_offset"] == 1


# -- 4. follower lag ------------------------------------------------------------------------

LAG_TIME_MS = 1500
# Fencing a broker also drops it from every ISR, so the session must outlast the wait for the
# shrink by far: only the lag rule can then remove the paused follower in time.
SESSION_TIMEOUT_MS = 90_000
SHRINK_WAIT_S = 30


def test_paused_follower_leaves_the_isr_and_rejoins_after_resuming(
        start_cluster: Callable[..., QuorumCluster]) -> None:
    cluster = start_cluster(3, controllers=1, overrides={
        "replica.lag.time.max.ms": str(LAG_TIME_MS),
        "broker.session.timeout.ms": str(SESSION_TIMEOUT_MS),
        "broker.heartbeat.interval.ms": "1000"})
    brokers = cluster.broker_ids
    topic = "lagging"
    create_topics(cluster.client_port(brokers[0]), {topic: (1, 3)})
    view = wait_for(lambda: (v := views(cluster, brokers).get((topic, 0))) and len(v.isr) == 3
                    and v, 30, "a full ISR")
    leader = view.leader
    follower = next(b for b in brokers if b != leader)
    port = cluster.client_port(leader)
    leader_metrics = metrics_url(HOST, cluster.node(leader).metrics_port)
    assert replica_metric(leader_metrics, "underreplicatedpartitions") == 0
    shrinks = replica_metric(leader_metrics, "isrshrinks_total")
    expands = replica_metric(leader_metrics, "isrexpands_total")
    cluster.send_signal(follower, signal.SIGSTOP)
    paused_at = time.monotonic()
    try:
        def shrunk() -> dict[str, Any] | None:
            produce(port, topic, b"x", acks=1)  # the leader's end must move for lag to show
            response = metadata(port)
            if response is None or follower in partition_views(response)[(topic, 0)].isr:
                return None
            return response

        response = wait_for(shrunk, SHRINK_WAIT_S, f"paused follower {follower} to leave the ISR",
                            details=cluster.logs)
        assert time.monotonic() - paused_at >= LAG_TIME_MS / 1000
        # Still registered and unfenced: the lag rule, not fencing, took it out of the ISR.
        assert follower in listed_brokers(response), f"broker {follower} was fenced"
        assert partition_views(response)[(topic, 0)].isr == tuple(
            b for b in view.isr if b != follower)
        assert f"Partition: 0\tLeader: {leader}" in under_replicated(port)
        wait_for(lambda: replica_metric(leader_metrics, "underreplicatedpartitions") == 1, 10,
                 "UnderReplicatedPartitions=1 in the leader's metrics")
        assert replica_metric(leader_metrics, "isrshrinks_total") == shrinks + 1
    finally:
        cluster.send_signal(follower, signal.SIGCONT)
    wait_for(lambda: follower in views(cluster, [leader])[(topic, 0)].isr, 30,
             f"follower {follower} to rejoin the ISR", details=cluster.logs)
    assert "Partition:" not in under_replicated(port)
    wait_for(lambda: replica_metric(leader_metrics, "underreplicatedpartitions") == 0, 10,
             "UnderReplicatedPartitions=0 in the leader's metrics")
    assert replica_metric(leader_metrics, "isrexpands_total") == expands + 1


def replica_metric(url: str, name: str) -> float | None:
    """kafka_server_replicamanager_<name> scraped from a broker's /metrics."""
    return value(scrape(url), f"kafka_server_replicamanager_{name}")


def under_replicated(port: int) -> str:
    """`raftka topics --describe --under-replicated-partitions` output."""
    raftka = Path(sys.executable).parent / "raftka"
    result = subprocess.run(
        [str(raftka), "topics", "--bootstrap-server", f"{HOST}:{port}", "--describe",
         "--under-replicated-partitions"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout
