"""The produce gap of `scripts/bench --replication`: kill -9 a partition leader while an
acks=all confluent-kafka producer writes to it, and time until a record sent after the kill
is acknowledged. A killed broker is only noticed when its session expires, so the cluster's
broker.session.timeout.ms bounds the gap."""

from __future__ import annotations

import time
from typing import Any

import confluent_kafka

from cluster.launcher import stop_quorum
from cluster.launcher.layout import ClusterInfo
from clients.protocol import ApiKey
from scripts.benchmarks.cluster import create_topic, request
from scripts.benchmarks.confluent_runs import VALUE


def active_controller(port: int) -> int:
    answer = request(port, ApiKey.DESCRIBE_QUORUM, {"topics": [{
        "topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]})
    leader: int = answer["topics"][0]["partitions"][0]["leader_id"]
    return leader


def kill_gap(info: ClusterInfo, bootstrap: str, ports: list[int], session_ms: int,
             bound_s: float) -> dict[str, Any]:
    """Kill -9 the leader of a partition (not the active controller when one qualifies)
    while an acks=all producer writes to it: the time from the kill to the first
    acknowledgement of a record sent after it, or null when none comes within `bound_s`."""
    leaders = create_topic(ports[0], "bench-gap", 3, 3, {"min.insync.replicas": "2"})
    controller = active_controller(ports[0])
    partition, victim = next(((p, l) for p, l in leaders.items() if l != controller),
                             next(iter(leaders.items())))
    acked_before = [0]
    resumed_at: list[float] = []

    def delivered_before(err: Any, msg: Any) -> None:
        if err is None:
            acked_before[0] += 1

    # Only records produced once the victim is dead count: an ack of one sent before could be
    # the dead leader's last answer, read late, which would make the gap look shorter.
    def delivered_after(err: Any, msg: Any) -> None:
        if err is None and not resumed_at:
            resumed_at.append(time.monotonic())

    producer = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
        "enable.idempotence": True, "topic.metadata.refresh.interval.ms": 500,
        "retry.backoff.ms": 20, "retry.backoff.max.ms": 100})
    killed_at = None
    callback = delivered_before
    end = time.monotonic() + 60
    while True:
        try:
            producer.produce("bench-gap", VALUE, partition=partition, on_delivery=callback)
        except BufferError:
            producer.poll(0.001)
        producer.poll(0)
        now = time.monotonic()
        if killed_at is None:
            if acked_before[0] > 20_000:
                killed_at = now
                stop_quorum(info.dir, node_id=victim, kill=True)  # returns once it is gone
                callback = delivered_after
            elif now > end:
                raise SystemExit("bench-gap: too few acknowledgements before the kill")
        elif resumed_at or now > killed_at + bound_s:
            break
    producer.purge()  # what is still queued would only time out against a dead partition
    producer.flush(10)
    return {"killed_node": victim, "was_controller": victim == controller,
            "session_timeout_ms": session_ms, "bound_s": bound_s,
            "resumed": bool(resumed_at),
            "produce_gap_s": round(resumed_at[0] - killed_at, 2) if resumed_at else None}
