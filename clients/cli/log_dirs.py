"""`raftka log-dirs --describe`: each broker's log directories and the replicas in them,
like kafka-log-dirs.sh (LogDirsCommand).

Output is Kafka's: `Querying brokers for log directories information`, `Received log
directory information from brokers 1,2,3`, then one line of JSON:
`{"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":"/data","error":null,
"partitions":[{"partition":"t-0","size":123,"offsetLag":0,"isFuture":false}]}]}]}`.
`--broker-list` (default: every broker) and `--topic-list` (default: every topic) narrow it.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Sequence

from clients.cli.admin_tool import add_connection_options, run_admin_tool

CLIENT_ID = "raftka-log-dirs"
ERROR_PREFIX = "Error: "
JSON_VERSION = 1


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "log-dirs", help="describe brokers' log directories (like kafka-log-dirs.sh)")
    add_connection_options(parser)
    parser.add_argument("--describe", action="store_true", required=True,
                        help="describe the log directories")
    parser.add_argument("--broker-list", metavar="1,2,3",
                        help="the brokers to query (default: every broker)")
    parser.add_argument("--topic-list", metavar="T1,T2",
                        help="the topics to describe (default: every topic)")
    parser.set_defaults(func=run)


# ---- pure parsing and formatting ----

def parse_broker_list(text: str | None) -> list[int] | None:
    """Broker ids of `--broker-list` (None: every broker); ValueError naming a bad one."""
    if text is None or not text.strip():
        return None
    ids = []
    for item in text.split(","):
        try:
            ids.append(int(item.strip()))
        except ValueError:
            raise ValueError(f"--broker-list: {item.strip()!r} is not a broker id") from None
    return ids


def parse_topic_list(text: str | None) -> list[str] | None:
    if text is None or not text.strip():
        return None
    return [t.strip() for t in text.split(",") if t.strip()]


def describe_json(described: Sequence[tuple[int, Sequence[Any]]]) -> str:
    """Kafka's JSON document for [(broker id, [LogDirDescription])]."""
    brokers = []
    for broker_id, log_dirs in described:
        brokers.append({"broker": broker_id, "logDirs": [
            {"logDir": d.path, "error": None if d.error.name == "NONE" else d.error.name,
             "partitions": [{"partition": f"{r.topic}-{r.partition}", "size": r.size,
                             "offsetLag": r.offset_lag, "isFuture": r.is_future}
                            for r in d.replicas]}
            for d in log_dirs]})
    return json.dumps({"version": JSON_VERSION, "brokers": brokers}, separators=(",", ":"))


# ---- the command ----

def _execute(args: argparse.Namespace, admin: Any) -> list[str]:
    wanted = parse_broker_list(args.broker_list)
    topics = parse_topic_list(args.topic_list)
    existing = [b.node_id for b in admin.describe_cluster().brokers]
    if wanted is None:
        wanted = existing
    missing = [b for b in wanted if b not in existing]
    if missing:
        raise ValueError(f"The given brokers do not exist from --broker-list: "
                         f"{','.join(map(str, missing))}. Current existent brokers: "
                         f"{','.join(map(str, existing))}")
    described = [(broker_id, admin.describe_log_dirs(broker_id, topics))
                 for broker_id in wanted]
    return ["Querying brokers for log directories information",
            f"Received log directory information from brokers {','.join(map(str, wanted))}",
            describe_json(described)]


def run(args: argparse.Namespace) -> int:
    return run_admin_tool(args, CLIENT_ID, _execute, ERROR_PREFIX)
