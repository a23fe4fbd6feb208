"""`raftka chaos`: a cluster on separate loopback addresses, a workload of idempotent and
transactional acks=all producers and a read_committed group, and a nemesis injecting faults
at random (seeded); then a check that nothing acknowledged was lost, duplicated or
reordered. Prints the report, writes `report.json` and `timeline.png` into --dir, and exits
1 on any violation, with its evidence."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from cluster.chaos.nemesis import FAULT_KINDS, parse_kinds

DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")
UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "chaos", help="run a cluster under random faults and check nothing acknowledged "
                      "is lost")
    parser.add_argument("--dir", required=True, type=Path,
                        help="where the cluster, report.json and timeline.png go")
    parser.add_argument("--nodes", type=int, default=3, help="combined nodes (default 3)")
    parser.add_argument("--duration", default="5m",
                        help="how long faults are injected: 90s, 5m, 1h (default 5m)")
    parser.add_argument("--nemesis", default=",".join(FAULT_KINDS),
                        help=f"fault kinds, comma-separated (default {','.join(FAULT_KINDS)})")
    parser.add_argument("--seed", type=int, default=1, help="the faults' random seed")
    parser.add_argument("--hosts", help="one loopback address per node (default "
                                        "127.0.0.11, 127.0.0.12, ...)")
    parser.add_argument("--partitions", type=int, default=3,
                        help="partitions of the workload's topic (default 3)")
    parser.add_argument("--session-timeout-ms", type=int, default=3000,
                        help="the brokers' broker.session.timeout.ms (default 3000)")
    parser.add_argument("--rate", type=float, default=400.0,
                        help="records/s of each of the two idempotent producers (default 400)")
    parser.set_defaults(func=run)


def parse_duration(text: str) -> float:
    """`90s`, `5m`, `1h`, `1500ms` or plain seconds -> seconds; ValueError otherwise."""
    match = DURATION.match(text.strip())
    if match is None or float(match.group(1)) <= 0:
        raise ValueError(f"--duration: {text!r} is not a duration such as 90s, 5m or 1h")
    return float(match.group(1)) * UNITS[match.group(2)]


def parse_hosts(text: str | None, nodes: int) -> list[str]:
    if text is None:
        return [f"127.0.0.{11 + i}" for i in range(nodes)]
    hosts = [h.strip() for h in text.split(",") if h.strip()]
    if len(hosts) != nodes:
        raise ValueError(f"--hosts: {len(hosts)} addresses for {nodes} nodes")
    if len(set(hosts)) != len(hosts):
        raise ValueError("--hosts: each node needs its own address")
    return hosts


def run(args: argparse.Namespace) -> int:
    if args.nodes < 3:
        raise ValueError("--nodes: at least 3 (the workload's topic has 3 replicas)")
    if args.partitions < 1 or args.rate <= 0 or args.session_timeout_ms < 1000:
        raise ValueError("--partitions must be >= 1, --rate > 0 and "
                         "--session-timeout-ms >= 1000")
    from cluster.chaos.run import ChaosSettings, run_chaos

    settings = ChaosSettings(args.dir.resolve(), args.nodes, parse_duration(args.duration),
                             parse_kinds(args.nemesis), args.seed,
                             parse_hosts(args.hosts, args.nodes), args.partitions,
                             args.session_timeout_ms, rate_per_producer=args.rate)
    print(f"raftka chaos: {settings.nodes} nodes on {','.join(settings.hosts)}, "
          f"{settings.duration_s:g} s of {','.join(settings.kinds)}, seed {settings.seed}",
          flush=True)
    result = run_chaos(settings)
    for line in result.lines:
        print(line)
    print(f"report: {result.report_path}")
    print(f"timeline: {result.timeline}")
    return 0 if result.ok else 1
