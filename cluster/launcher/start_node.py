"""`python -m cluster.launcher.start_node`: scripts/start-node."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from cluster.launcher.cluster import DEFAULT_TIMEOUT, start_node
from cluster.launcher.processes import LauncherError
from cluster.launcher.readiness import READINESS_CHECKS


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="start-node",
                                     description="Restart one node of a local cluster.")
    parser.add_argument("--dir", required=True, help="cluster directory")
    parser.add_argument("--node", type=int, required=True, help="node id")
    parser.add_argument("--readiness", choices=sorted(READINESS_CHECKS), default="kraft")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help="seconds to wait")
    args = parser.parse_args(argv)
    try:
        start_node(args.dir, args.node, ready=READINESS_CHECKS[args.readiness],
                   timeout=args.timeout)
    except LauncherError as exc:
        print(f"start-node: {exc}", file=sys.stderr)
        return 1
    print(f"node {args.node} started")
    return 0


if __name__ == "__main__":
    sys.exit(main())
