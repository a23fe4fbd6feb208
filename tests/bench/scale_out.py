"""`scripts/bench --scale-out`: aggregate produce throughput over 8 partitions (RF=1,
acks=1) on a 4-node cluster against a 2-node one on the same machine, to show what happens when
more Python brokers than cores share the machine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from broker.launcher import stop_quorum
from tests.bench.cluster import create_topic, start_cluster
from tests.bench.native_load import RECORD, LoadGenerator
from tests.bench.node_cpu import node_pids, nodes_cpu, per_gb

PARTITIONS = 8


def one_cluster(directory: Path, load: LoadGenerator, nodes: int, records: int
                ) -> dict[str, Any]:
    cluster = start_cluster(directory, nodes)
    try:
        leaders = create_topic(cluster.brokers[0].client_port, "bench-scale", PARTITIONS, 1)
        with nodes_cpu(node_pids(cluster)) as used:
            produced = load.produce(cluster.bootstrap_servers, "bench-scale", records, "1")
    finally:
        stop_quorum(cluster.dir, kill=True)
    appended = records * len(RECORD)
    led: dict[str, list[int]] = {}
    for partition, leader in sorted(leaders.items()):
        led.setdefault(str(leader), []).append(partition)
    return {**produced, "nodes": nodes,
            "per_node": {str(n): {"led_partitions": led.get(str(n), []), "cpu_s": cpu_s,
                                  "cpu_s_per_gb": per_gb(cpu_s, appended)}
                         for n, cpu_s in used.items()}}


def scale_out_bench(directory: Path, load: LoadGenerator, records: int,
                    cores: int | None) -> dict[str, Any]:
    two = one_cluster(directory / "two", load, 2, records)
    four = one_cluster(directory / "four", load, 4, records)
    return {"mode": "scale_out", "records": records, "partitions": PARTITIONS, "rf": 1,
            "acks": "1", "cores": cores, "nodes_2": two, "nodes_4": four,
            "nodes_4_vs_nodes_2": round(four["records_per_s"] / two["records_per_s"], 2)}
