"""`scripts/bench --replication`'s throughput matrix: RF=1 acks=1, RF=3 acks=1 and RF=3
acks=all, each on 1 and on 4 partitions, loaded by the native producer on one 3-node cluster,
with every node's CPU seconds per GB appended and the ratios issue-level goals name.

Each case's topic is deleted once it is measured: on a virtual machine, page-cache writes into
memory the guest has not touched before cost several times a plain copy, and the cache grows
into such memory as topics accumulate; without the deletion every case (and round) would meet
a different memory state, and later cases ran up to 2.5x slower for the same code."""

from __future__ import annotations

from typing import Any, Callable

from scripts.benchmarks.native_load import RECORD, LoadGenerator
from scripts.benchmarks.node_cpu import nodes_cpu, per_gb

CASES = (("rf1_acks1", 1, "1"), ("rf3_acks1", 3, "1"), ("rf3_acks_all", 3, "all"))


def run_case(load: LoadGenerator, bootstrap: str, pids: dict[int, int | None],
             create: Callable[..., dict[int, int]], name: str, partitions: int, rf: int,
             acks: str, records: int, round_: int = 0,
             delete: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Produce `records` into a fresh topic, then consume it (and `delete` it); throughput,
    per-node CPU and who led which partition."""
    topic = f"bench-{name}-p{partitions}-r{round_}".replace("_", "-")
    leaders = create(topic, partitions, rf, {"min.insync.replicas": "2"} if rf == 3 else {})
    with nodes_cpu(pids) as used:
        produced = load.produce(bootstrap, topic, records, acks)
    appended = records * len(RECORD)
    led: dict[int, list[int]] = {node: [] for node in pids}
    for partition, leader in sorted(leaders.items()):
        led.setdefault(leader, []).append(partition)
    nodes = {}
    for node, cpu_s in used.items():
        # With several partitions a node can lead some and follow the rest: "leader" then
        # means it leads at least one, and the partition lists say the rest.
        role = "leader" if led.get(node) else ("follower" if rf == 3 else "idle")
        followed = ([p for p in sorted(leaders) if p not in led.get(node, [])]
                    if rf == 3 else [])
        nodes[str(node)] = {"role": role, "led_partitions": led.get(node, []),
                            "followed_partitions": followed,
                            "cpu_s": cpu_s, "cpu_s_per_gb": per_gb(cpu_s, appended)}
    total = sum(c for c in used.values() if c is not None)
    consumed = load.consume(bootstrap, topic, records)
    if delete is not None:
        delete(topic)
    return {**produced, "partitions": partitions, "rf": rf, "acks": acks, "nodes": nodes,
            "cluster_cpu_s_per_gb": per_gb(total, appended), "consume": consumed}


def mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(sum(present) / len(present), 2) if present else None


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a is not None and b else None


def goal_ratios(single: dict[str, dict[str, Any]], four: dict[str, dict[str, Any]]
                ) -> dict[str, Any]:
    """The ratios of the goals: throughput of RF=3 acks=all against RF=1 acks=1, and replica
    CPU per GB against the leader's own append cost (the RF=1 node's CPU per GB)."""
    def by_role(case: dict[str, Any], role: str) -> float | None:
        return mean([n["cpu_s_per_gb"] for n in case["nodes"].values() if n["role"] == role])

    append_cost = by_role(single["rf1_acks1"], "leader")
    rf3 = single["rf3_acks_all"]
    # On 4 partitions every node leads some partitions and follows the rest, so the cost of a
    # replica is the cluster's CPU per GB shared over the three copies.
    four_replica = ratio(four["rf3_acks_all"]["cluster_cpu_s_per_gb"], 3)
    return {
        "rf3_acks_all_vs_rf1_acks1_p1": ratio(rf3["records_per_s"],
                                              single["rf1_acks1"]["records_per_s"]),
        "rf3_acks_all_vs_rf1_acks1_p4": ratio(four["rf3_acks_all"]["records_per_s"],
                                              four["rf1_acks1"]["records_per_s"]),
        "rf3_acks1_vs_rf1_acks1_p1": ratio(single["rf3_acks1"]["records_per_s"],
                                           single["rf1_acks1"]["records_per_s"]),
        "append_cpu_s_per_gb_p1": append_cost,
        "follower_cpu_vs_append_p1": ratio(by_role(rf3, "follower"), append_cost),
        "leader_cpu_vs_append_p1": ratio(by_role(rf3, "leader"), append_cost),
        "replica_cpu_vs_append_p4": ratio(four_replica,
                                          four["rf1_acks1"]["cluster_cpu_s_per_gb"]),
    }


def replication_matrix(load: LoadGenerator, bootstrap: str, pids: dict[int, int | None],
                       create: Callable[..., dict[int, int]], records: int,
                       rounds: int = 1,
                       delete: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Every case on 1 and on 4 partitions, `rounds` times, the order rotating each round so
    that load from other processes hits the cases alike; each case reports its median round
    (by records/s) plus "runs", every round's records/s."""
    order = [(partitions, name, rf, acks) for partitions in (1, 4) for name, rf, acks in CASES]
    runs: dict[tuple[int, str], list[dict[str, Any]]] = {(p, n): [] for p, n, _, _ in order}
    for round_ in range(rounds):
        shift = round_ % len(order)
        for partitions, name, rf, acks in order[shift:] + order[:shift]:
            runs[(partitions, name)].append(run_case(load, bootstrap, pids, create, name,
                                                     partitions, rf, acks, records, round_,
                                                     delete))
    result: dict[str, Any] = {"p1": {}, "p4": {}}
    for (partitions, name), case_runs in runs.items():
        ranked = sorted(case_runs, key=lambda r: r["records_per_s"])
        result[f"p{partitions}"][name] = {**ranked[(len(ranked) - 1) // 2],
                                          "runs": [r["records_per_s"] for r in case_runs]}
    return {**result, "ratios": goal_ratios(result["p1"], result["p4"])}
