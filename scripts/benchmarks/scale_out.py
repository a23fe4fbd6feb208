"""`scripts/bench --scale-out`: aggregate produce throughput over 8 partitions (RF=1,
acks=1) on a 4-node cluster against a 2-node one on the same machine, to show what happens when
more Python brokers than cores share the machine. Both clusters run side by side (the idle one
costs little) and take turns each round, so that load from other processes hits them alike."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

from cluster.launcher import stop_quorum
from cluster.launcher.layout import ClusterInfo
from scripts.benchmarks.cluster import create_topic, start_cluster
from scripts.benchmarks.native_load import RECORD, LoadGenerator
from scripts.benchmarks.node_cpu import node_pids, nodes_cpu, per_gb

PARTITIONS = 8
SIZES = (2, 4)


def one_run(cluster: ClusterInfo, load: LoadGenerator, records: int, round_: int
            ) -> dict[str, Any]:
    topic = f"bench-scale-r{round_}"
    leaders = create_topic(cluster.brokers[0].client_port, topic, PARTITIONS, 1)
    with nodes_cpu(node_pids(cluster)) as used:
        produced = load.produce(cluster.bootstrap_servers, topic, records, "1")
    appended = records * len(RECORD)
    led: dict[str, list[int]] = {}
    for partition, leader in sorted(leaders.items()):
        led.setdefault(str(leader), []).append(partition)
    return {**produced, "nodes": len(cluster.nodes),
            "per_node": {str(n): {"led_partitions": led.get(str(n), []), "cpu_s": cpu_s,
                                  "cpu_s_per_gb": per_gb(cpu_s, appended)}
                         for n, cpu_s in used.items()}}


def scale_out_bench(directory: Path, load: LoadGenerator, records: int, rounds: int,
                    cores: int | None) -> dict[str, Any]:
    runs: dict[int, list[dict[str, Any]]] = {size: [] for size in SIZES}
    with ExitStack() as stack:
        clusters = {}
        for size in SIZES:
            clusters[size] = start_cluster(directory / f"nodes-{size}", size)
            stack.callback(stop_quorum, clusters[size].dir, kill=True)
        for round_ in range(max(rounds, 1)):
            order = SIZES if round_ % 2 == 0 else SIZES[::-1]
            for size in order:
                runs[size].append(one_run(clusters[size], load, records, round_))
    medians = {}
    for size, size_runs in runs.items():
        ranked = sorted(size_runs, key=lambda r: r["records_per_s"])
        medians[size] = {**ranked[(len(ranked) - 1) // 2],
                         "runs": [r["records_per_s"] for r in size_runs]}
    return {"mode": "scale_out", "records": records, "rounds": max(rounds, 1),
            "partitions": PARTITIONS, "rf": 1, "acks": "1", "cores": cores,
            "nodes_2": medians[2], "nodes_4": medians[4],
            "nodes_4_vs_nodes_2": round(medians[4]["records_per_s"]
                                        / medians[2]["records_per_s"], 2)}
