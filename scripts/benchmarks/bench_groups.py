"""`scripts/bench-groups`: the group coordinator on a local 3-node cluster: sequential
OffsetCommit round trips, a confluent-kafka consumer committing synchronously after every
record, and the time from a member leaving to the group being Stable again. The script's
header lists the keys of its one JSON line."""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer

from clients.cli.main import OneLineParser, positive_int
from cluster.launcher import stop_quorum
from cluster.launcher.layout import ClusterInfo
from cluster.testing.waiting import wait_for
from clients.net import BlockingKafkaConnection
from clients.protocol import ApiKey
from scripts.benchmarks.cluster import HOST, create_topic, percentiles_ms, request, start_cluster
from scripts.benchmarks.commit_rate import sync_commit_rate

OVERRIDES = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.replication.factor": "3"}
CONSUMER = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 100,
            "auto.offset.reset": "earliest", "enable.auto.commit": False}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = OneLineParser(prog="scripts/bench-groups")
    parser.add_argument("--commits", type=positive_int, default=2000)
    parser.add_argument("--rounds", type=positive_int, default=7)
    return parser.parse_args(argv)


def coordinator(cluster: ClusterInfo, group: str) -> tuple[int, int]:
    """(node id, port) of the group's coordinator, once it is loaded and answering."""
    port = cluster.brokers[0].client_port

    def probe() -> tuple[int, int] | None:
        found = request(port, ApiKey.FIND_COORDINATOR, {"key": group, "key_type": 0}, 3)
        if found["error_code"]:
            return None
        fetched = request(found["port"], ApiKey.OFFSET_FETCH, {"group_id": group,
                                                              "topics": None}, 7)
        return None if fetched["error_code"] else (found["node_id"], found["port"])
    return wait_for(probe, f"the coordinator of {group}")


def commit_round_trips(cluster: ClusterInfo, count: int) -> dict[str, Any]:
    _, port = coordinator(cluster, "bench-commit")
    latencies: list[float] = []
    with BlockingKafkaConnection(HOST, port, client_id="bench-groups", timeout=30) as conn:
        def commit(offset: int) -> None:
            response = conn.request(ApiKey.OFFSET_COMMIT, {
                "group_id": "bench-commit", "generation_id_or_member_epoch": -1,
                "member_id": "", "topics": [{"name": "bench", "partitions": [
                    {"partition_index": 0, "committed_offset": offset,
                     "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
            code = response["topics"][0]["partitions"][0]["error_code"]
            if code:
                raise SystemExit(f"OffsetCommit failed with error {code}")

        for offset in range(100):  # warm-up
            commit(offset)
        started = time.perf_counter()
        for offset in range(count):
            sent = time.perf_counter()
            commit(offset)
            latencies.append(time.perf_counter() - sent)
        elapsed = time.perf_counter() - started
    spread = percentiles_ms(latencies, digits=2)
    return {"offset_commits_per_s": round(count / elapsed),
            "commit_p50_ms": spread["p50_ms"], "commit_p99_ms": spread["p99_ms"]}


def group_view(port: int, group: str) -> tuple[str, set[str]]:
    described = request(port, ApiKey.DESCRIBE_GROUPS, {
        "groups": [group], "include_authorized_operations": False})["groups"][0]
    return described["group_state"], {m["member_id"] for m in described["members"]}


def leave_to_stable(cluster: ClusterInfo, rounds: int) -> dict[str, Any]:
    servers = cluster.bootstrap_servers
    group = "bench-rebalance"

    def consumer() -> Consumer:
        c = Consumer({"bootstrap.servers": servers, "group.id": group, **CONSUMER})
        c.subscribe(["bench"])
        return c

    stayers = [consumer(), consumer()]
    _, port = coordinator(cluster, group)
    samples: list[float] = []
    for _ in range(rounds):
        leaver = consumer()
        members = stayers + [leaver]

        def stable_with(count: int) -> bool:
            for c in members:
                c.poll(0.01)
            state, ids = group_view(port, group)
            return state == "Stable" and len(ids) == count

        wait_for(lambda: stable_with(3), "three stable members")
        members = stayers
        left_at = time.perf_counter()
        leaver.close()
        while True:
            state, ids = group_view(port, group)
            if state == "Stable" and len(ids) == 2:
                break
            for c in stayers:
                c.poll(0.005)
            if time.perf_counter() - left_at > 60:
                raise SystemExit("the group did not become stable again")
        samples.append((time.perf_counter() - left_at) * 1000)
    for c in stayers:
        c.close()
    return {"leave_to_stable_p50_ms": round(statistics.median(samples), 1),
            "leave_to_stable_ms": [round(s, 1) for s in samples]}


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-groups-") as tmp:
        cluster = start_cluster(Path(tmp), 3, OVERRIDES)
        try:
            create_topic(cluster.brokers[0].client_port, "bench", 6, 3)
            result = {"nodes": 3, "offsets_replication": 3, "commits": args.commits,
                      "rounds": args.rounds}
            result.update(commit_round_trips(cluster, args.commits))
            create_topic(cluster.brokers[0].client_port, "bench-sync-commit", 1, 3)
            result.update(sync_commit_rate(cluster.bootstrap_servers, "bench-sync-commit",
                                           args.commits))
            result.update(leave_to_stable(cluster, args.rounds))
        finally:
            stop_quorum(cluster.dir, kill=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
