"""`python -m cluster.launcher.bootstrap`: scripts/bootstrap-quorum."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from cluster.launcher.cluster import DEFAULT_TIMEOUT, bootstrap_quorum
from cluster.launcher.processes import LauncherError
from cluster.launcher.readiness import READINESS_CHECKS


def parse_set(items: list[str]) -> dict[str, str]:
    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"--set {item!r}: expected KEY=VALUE")
        overrides[key] = value
    return overrides


def parse_hosts(text: str) -> list[str]:
    return [host.strip() for host in text.split(",") if host.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bootstrap-quorum",
                                     description="Configure, format and start a local cluster.")
    parser.add_argument("--dir", required=True, help="cluster directory")
    parser.add_argument("--nodes", type=int, default=3,
                        help="combined nodes, or broker-only nodes with --controllers")
    parser.add_argument("--controllers", type=int, default=0,
                        help="controller-only nodes (0: every node is combined)")
    parser.add_argument("--base-port", type=int, default=9092)
    parser.add_argument("--hosts", type=parse_hosts, default=None, metavar="ADDR,ADDR,...",
                        help="one loopback address per node (e.g. 127.0.0.11,127.0.0.12,"
                             "127.0.0.13): each node's listeners and Raft port bind to its "
                             "own, and so do its outgoing connections")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="config override for every node (repeatable)")
    parser.add_argument("--readiness", choices=sorted(READINESS_CHECKS), default="kraft",
                        help="what 'ready' means (listening: answers ApiVersions)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help="seconds the whole bootstrap may take, formatting included")
    args = parser.parse_args(argv)
    try:
        cluster = bootstrap_quorum(args.dir, args.nodes, args.controllers, args.base_port,
                                   parse_set(args.set), ready=READINESS_CHECKS[args.readiness],
                                   timeout=args.timeout, hosts=args.hosts)
    except LauncherError as exc:
        print(f"bootstrap-quorum: {exc}", file=sys.stderr)
        return 1
    print(cluster.bootstrap_servers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
