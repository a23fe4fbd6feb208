"""`python -m cluster.launcher.stop_quorum`: scripts/stop-quorum."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from cluster.launcher.cluster import stop_quorum
from cluster.launcher.processes import LauncherError


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="stop-quorum",
                                     description="Stop the nodes of a local cluster.")
    parser.add_argument("--dir", required=True, help="cluster directory")
    parser.add_argument("--node", type=int, help="stop only this node")
    parser.add_argument("--kill", action="store_true", help="SIGKILL instead of SIGTERM")
    args = parser.parse_args(argv)
    try:
        stopped = stop_quorum(args.dir, args.node, kill=args.kill)
    except LauncherError as exc:
        print(f"stop-quorum: {exc}", file=sys.stderr)
        return 1
    print("stopped: " + (", ".join(f"node {n}" for n in stopped) if stopped else "nothing"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
