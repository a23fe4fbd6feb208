"""`raftka broker-api-versions`: each broker's API version ranges, like
kafka-broker-api-versions.sh.

For every broker in Metadata: `host:port (id: N rack: R isFenced: false) -> (` then one
`\tName(key): min to max [usable: v]` line per API the broker lists (`UNSUPPORTED` when this
client shares no version with it), comma-separated, then `)`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Mapping

from clients.cli.admin_tool import (
    add_command_config,
    add_timeout_option,
    api_timeout_ms,
    command_config,
)

CLIENT_ID = "raftka-broker-api-versions"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "broker-api-versions",
        help="print each broker's supported API versions (like kafka-broker-api-versions.sh)")
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]")
    add_command_config(parser)
    add_timeout_option(parser)
    parser.set_defaults(func=run)


def api_lines(versions: Mapping[int, tuple[int, int]],
              ours: Mapping[int, tuple[int, int]], names: Mapping[int, str]) -> list[str]:
    """One entry per API the broker lists, by key; all but the last end with a comma."""
    entries = []
    for key in sorted(versions):
        low, high = versions[key]
        name = names.get(key, "UNKNOWN")
        mine = ours.get(key)
        usable = "UNSUPPORTED"
        if mine is not None and max(low, mine[0]) <= min(high, mine[1]):
            usable = str(min(high, mine[1]))
        entries.append(f"\t{name}({key}): {low} to {high} [usable: {usable}]")
    return [e + "," for e in entries[:-1]] + entries[-1:]


def broker_block(host: str, port: int, node_id: int, rack: str | None,
                 versions: Mapping[int, tuple[int, int]],
                 ours: Mapping[int, tuple[int, int]], names: Mapping[int, str]) -> list[str]:
    rack_text = rack if rack is not None else "null"
    return ([f"{host}:{port} (id: {node_id} rack: {rack_text} isFenced: false) -> ("]
            + api_lines(versions, ours, names) + [")"])


def run(args: argparse.Namespace) -> int:
    from clients.admin import BlockingAdmin, ConfigError
    from clients.net import KafkaConnectionError
    from clients.protocol import APIS, SUPPORTED_VERSIONS, KafkaError, ProtocolError

    config = command_config(args)
    config.update({"bootstrap.servers": args.bootstrap_server, "client.id": CLIENT_ID,
                   "default.api.timeout.ms": str(api_timeout_ms(args))})
    names = {int(key): api.name for key, api in APIS.items()}
    ours = {int(key): v for key, v in SUPPORTED_VERSIONS.items()}
    try:
        with BlockingAdmin(config) as admin:
            brokers = admin.broker_versions()
    except (KafkaError, KafkaConnectionError, ProtocolError, ConfigError, OSError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    lines: list[str] = []
    for node, versions in brokers.values():
        lines += broker_block(node.host, node.port, node.node_id, node.rack, versions, ours,
                              names)
    print("\n".join(lines))
    return 0
