"""`raftka cluster`: cluster-wide commands, like kafka-cluster.sh.

- `cluster cluster-id --bootstrap-server B`: prints `Cluster ID: <id>`.
- `cluster unregister --bootstrap-server B --id N`: removes broker N, gone for good, from
  the cluster's metadata (UnregisterBroker): its partitions lose it from their ISRs and
  leaderships, and it no longer counts as a registered broker. Prints
  `Broker N is no longer registered.`
"""

from __future__ import annotations

import argparse
from typing import Any

from clients.cli.admin_tool import add_connection_options, run_admin_tool

CLIENT_ID = "raftka-cluster"
ERROR_PREFIX = "Error: "


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("cluster", help="cluster-wide commands (like kafka-cluster.sh)")
    commands = parser.add_subparsers(dest="cluster_command", metavar="COMMAND", required=True)
    cluster_id = commands.add_parser("cluster-id", help="print the cluster id")
    add_connection_options(cluster_id)
    cluster_id.set_defaults(func=run_cluster_id)
    unregister = commands.add_parser("unregister",
                                     help="remove a broker that is gone for good")
    add_connection_options(unregister)
    unregister.add_argument("--id", type=int, required=True, metavar="N",
                            help="the id of the broker to unregister")
    unregister.set_defaults(func=run_unregister)


def _cluster_id(args: argparse.Namespace, admin: Any) -> list[str]:
    return [f"Cluster ID: {admin.describe_cluster().cluster_id}"]


def _unregister(args: argparse.Namespace, admin: Any) -> list[str]:
    admin.unregister_broker(args.id)
    return [f"Broker {args.id} is no longer registered."]


def run_cluster_id(args: argparse.Namespace) -> int:
    return run_admin_tool(args, CLIENT_ID, _cluster_id, ERROR_PREFIX)


def run_unregister(args: argparse.Namespace) -> int:
    return run_admin_tool(args, CLIENT_ID, _unregister, ERROR_PREFIX)
