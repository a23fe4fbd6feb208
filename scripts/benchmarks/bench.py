"""`scripts/bench`: broker benchmarks with real clients against a local cluster started by
the launcher on random ports in a temporary directory. This module reads the options, starts
the cluster each mode needs and prints the mode's one JSON line; the measurements live in
the modules beside it (rf1, tls, client_comparison, transactions, replication, leader_kill,
commit_rate, latency, scale_out). The script's header lists the modes, options and keys."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from clients.cli.main import OneLineParser, positive_int
from cluster.launcher import stop_quorum
from cluster.launcher.layout import ClusterInfo
from cluster.launcher.processes import read_pid
from scripts.benchmarks import transactions
from scripts.benchmarks.client_comparison import clients_bench
from scripts.benchmarks.cluster import create_topic, delete_topic, start_cluster
from scripts.benchmarks.commit_rate import sync_commit_rate
from scripts.benchmarks.latency import latency_bench, render
from scripts.benchmarks.leader_kill import kill_gap
from scripts.benchmarks.native_load import LoadGenerator
from scripts.benchmarks.node_cpu import node_pids
from scripts.benchmarks.replication import replication_matrix
from scripts.benchmarks.rf1 import rf1_bench
from scripts.benchmarks.scale_out import scale_out_bench
from scripts.benchmarks.tls import tls_bench, tls_cluster


def key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, not {text!r}")
    return key, value


def non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, not {text!r}")
    return value


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1], not {text!r}")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = OneLineParser(prog="scripts/bench")
    parser.add_argument("--replication", action="store_true")
    parser.add_argument("--clients", action="store_true")
    parser.add_argument("--transactions", action="store_true")
    parser.add_argument("--tls", action="store_true")
    parser.add_argument("--latency", action="store_true")
    parser.add_argument("--scale-out", action="store_true")
    parser.add_argument("--records", type=positive_int, default=None)
    parser.add_argument("--rounds", type=positive_int, default=3)
    parser.add_argument("--topic-config", action="append", default=[], metavar="KEY=VALUE",
                        type=key_value)
    parser.add_argument("--gap-session-ms", type=positive_int, action="append", default=None)
    parser.add_argument("--gap-bound-s", type=float, default=30.0)
    parser.add_argument("--commits", type=positive_int, default=2_000)
    parser.add_argument("--fraction", type=fraction, default=0.5)
    parser.add_argument("--peak", type=positive_int, default=None)
    parser.add_argument("--seconds", type=positive_int, default=10)
    parser.add_argument("--linger-ms", type=non_negative, default=1)
    parser.add_argument("--no-kcat", action="store_true")
    args = parser.parse_args(argv)
    if sum(map(bool, (args.replication, args.latency, args.scale_out, args.clients,
                      args.transactions, args.tls))) > 1:
        parser.error("choose one mode")
    if args.latency and args.no_kcat:
        parser.error("--latency measures with kcat; it cannot run with --no-kcat")
    if args.records is None:
        native = args.replication or args.latency or args.scale_out
        args.records = 2_000_000 if native else 500_000
    args.gap_session_ms = args.gap_session_ms or [9_000, 2_000]
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.tls:
        with tempfile.TemporaryDirectory(prefix="raftka-bench-") as tmp:
            info, plain, secure, ssl_config = tls_cluster(Path(tmp))
            try:
                create_topic(info.nodes[0].client_port, "bench", 1, 1)
                result = tls_bench(plain, secure, ssl_config, read_pid(info.nodes[0]),
                                   args.records, args.rounds)
                print(json.dumps(result))
            finally:
                stop_quorum(info.dir, kill=True)
        return
    if args.scale_out:
        with tempfile.TemporaryDirectory(prefix="raftka-bench-") as tmp:
            load = LoadGenerator(Path(tmp), allow_kcat=not args.no_kcat)
            result = scale_out_bench(Path(tmp), load, args.records, args.rounds,
                                     os.cpu_count())
        print(json.dumps({**result, "load_generator": load.name}))
        return
    with tempfile.TemporaryDirectory(prefix="raftka-bench-") as tmp:
        directory = Path(tmp)
        if args.replication or args.latency:
            info = replication_cluster(directory, args.gap_session_ms[0])
        elif args.transactions:
            info = start_cluster(directory, 1, dict(transactions.CLUSTER_OVERRIDES))
        else:
            info = start_cluster(directory, 1)
        try:
            ports = [n.client_port for n in info.nodes if n.client_port]
            bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports)
            if args.latency:
                result = latency_main(args, directory, bootstrap, ports)
            elif args.clients:
                create_topic(ports[0], "bench", 1, 1)
                result = clients_bench(bootstrap, args.records, args.rounds)
            elif args.transactions:
                result = transactions.transactions_bench(
                    bootstrap, args.records, args.rounds,
                    lambda name: create_topic(ports[0], name, 1, 1))
            elif not args.replication:
                configs = dict(args.topic_config)
                keyed = "compact" in configs.get("cleanup.policy", "")
                create_topic(ports[0], "bench", 1, 1, configs)
                result = {**rf1_bench(bootstrap, read_pid(info.nodes[0]), args.records,
                                      args.rounds, keyed),
                          "topic_config": configs, "keyed": keyed}
            else:
                result = replication_bench(args, directory, info, bootstrap, ports)
            print(json.dumps(result))
        finally:
            stop_quorum(info.dir, kill=True)


def replication_cluster(directory: Path, session_ms: int) -> ClusterInfo:
    return start_cluster(directory, 3, {
        "broker.session.timeout.ms": str(session_ms),
        "broker.heartbeat.interval.ms": str(max(session_ms // 4, 100)),
        "offsets.topic.replication.factor": "3"})


def replication_bench(args: argparse.Namespace, directory: Path, info: ClusterInfo,
                      bootstrap: str, ports: list[int]) -> dict[str, Any]:
    """The RF/acks/partitions matrix, the synchronous commit rate and the kill gap on the
    cluster `info` (whose session timeout is the first --gap-session-ms), then the kill gap
    on a fresh cluster for each other session timeout."""
    load = LoadGenerator(directory, allow_kcat=not args.no_kcat)

    def create(name: str, partitions: int, rf: int, configs: dict[str, str]) -> dict[int, int]:
        return create_topic(ports[0], name, partitions, rf, configs)

    data_dirs = [Path(d) for node in info.brokers
                 for d in node.properties["log.dirs"].split(",")]

    def delete(name: str) -> None:
        delete_topic(ports[0], name, data_dirs)

    result = {"mode": "replication", "load_generator": load.name, "records": args.records,
              "rounds": args.rounds,
              **replication_matrix(load, bootstrap, node_pids(info), create, args.records,
                                   args.rounds, delete)}
    create_topic(ports[0], "bench-commit", 1, 3, {"min.insync.replicas": "2"})
    result["commit"] = sync_commit_rate(bootstrap, "bench-commit", args.commits)
    first, *others = args.gap_session_ms
    kills = [kill_gap(info, bootstrap, ports, first, args.gap_bound_s)]
    for session_ms in others:
        other = replication_cluster(directory / f"gap-{session_ms}", session_ms)
        try:
            other_ports = [n.client_port for n in other.brokers]
            kills.append(kill_gap(other, other.bootstrap_servers, other_ports, session_ms,
                                  args.gap_bound_s))
        finally:
            stop_quorum(other.dir, kill=True)
    return {**result, "kill": kills}


def latency_main(args: argparse.Namespace, directory: Path, bootstrap: str,
                 ports: list[int]) -> dict[str, Any]:
    """Peak RF=3 acks=all throughput (or --peak), then the paced run at --fraction of it."""
    load = LoadGenerator(directory, allow_kcat=not args.no_kcat)
    if not load.kcat:
        raise SystemExit("scripts/bench --latency needs kcat: it is not installed and, not "
                         "running as root, the script cannot install it")
    peak = args.peak
    measured_peak = None
    if peak is None:
        create_topic(ports[0], "bench-peak", 1, 3, {"min.insync.replicas": "2"})
        measured_peak = load.produce(bootstrap, "bench-peak", args.records, "all")
        peak = measured_peak["records_per_s"]
    create_topic(ports[0], "bench-latency", 1, 3, {"min.insync.replicas": "2"})
    rate = max(int(peak * args.fraction), 1)
    run = latency_bench(load.kcat, bootstrap, "bench-latency", rate, args.seconds,
                        args.linger_ms)
    print(render(run["histogram"]), file=sys.stderr)
    return {"mode": "latency", "load_generator": load.name, "rf": 3, "acks": "all",
            "partitions": 1, "linger_ms": args.linger_ms, "peak_records_per_s": peak,
            "peak_measured": measured_peak, "fraction": args.fraction, **run}


if __name__ == "__main__":
    main()
