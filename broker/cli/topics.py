"""`raftka topics`: create, list, describe, alter and delete topics, like kafka-topics.sh.

Output follows Kafka 4.0's TopicCommand, including the (always empty here) `Elr` and
`LastKnownElr` columns of `--describe`. Errors print `Error while executing topic command :
<message>` on stderr and exit 1.
"""

from __future__ import annotations

import argparse
import base64
import sys
from typing import Any, Sequence

CLIENT_ID = "raftka-topics"
ERROR_PREFIX = "Error while executing topic command : "


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("topics", help="create, list, describe, alter or delete "
                                   "topics (like kafka-topics.sh)")
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--create", action="store_true", help="create a topic")
    action.add_argument("--list", action="store_true", help="list the topics")
    action.add_argument("--describe", action="store_true", help="describe topics")
    action.add_argument("--delete", action="store_true", help="delete a topic")
    action.add_argument("--alter", action="store_true",
                        help="raise a topic's partition count")
    parser.add_argument("--topic", metavar="TOPIC")
    parser.add_argument("--partitions", type=int, metavar="N")
    parser.add_argument("--replication-factor", type=int, metavar="R")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="a topic config for --create (repeatable)")
    parser.add_argument("--under-replicated-partitions", action="store_true",
                        help="with --describe: only partitions whose ISR is smaller than "
                             "their replica set")
    parser.add_argument("--exclude-internal", action="store_true",
                        help="with --list or --describe: leave out internal topics")
    parser.add_argument("--command-config", metavar="FILE",
                        help="a properties file of admin client settings")
    parser.set_defaults(func=run)


# ---- pure formatting ----

def topic_id_text(topic_id: Any) -> str:
    """Kafka's Uuid text: URL-safe base64 of the 16 bytes without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode("ascii").rstrip("=")


def _ids(values: Sequence[int]) -> str:
    return ",".join(str(v) for v in values)


def describe_lines(description: Any, configs: dict[str, str | None],
                   under_replicated_only: bool = False) -> list[str]:
    """Kafka's --describe lines for one topic (only partition lines when filtering)."""
    partitions = description.partitions
    replication = len(partitions[0].replicas) if partitions else 0
    lines: list[str] = []
    if not under_replicated_only:
        config_text = ",".join(f"{k}={v}" for k, v in sorted(configs.items()))
        lines.append(f"Topic: {description.name}\tTopicId: "
                     f"{topic_id_text(description.topic_id)}\tPartitionCount: "
                     f"{len(partitions)}\tReplicationFactor: {replication}\t"
                     f"Configs: {config_text}")
    for p in partitions:
        if under_replicated_only and len(p.isr) >= len(p.replicas):
            continue
        leader = str(p.leader) if p.leader >= 0 else "none"
        line = (f"\tTopic: {description.name}\tPartition: {p.partition}\tLeader: {leader}\t"
                f"Replicas: {_ids(p.replicas)}\tIsr: {_ids(p.isr)}\tElr: \tLastKnownElr: ")
        if p.offline_replicas:
            line += f"\tOffline: {_ids(p.offline_replicas)}"
        lines.append(line)
    return lines


def parse_configs(entries: Sequence[str]) -> dict[str, str]:
    configs: dict[str, str] = {}
    for entry in entries:
        key, sep, value = entry.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"Invalid topic config: all configs to be added must be in the "
                             f"format \"key=val\" (got {entry!r}).")
        configs[key.strip()] = value.strip()
    return configs


# ---- commands ----

def _admin_config(args: argparse.Namespace) -> dict[str, str]:
    config: dict[str, str] = {}
    if args.command_config:
        from broker.config import load_properties
        config.update(load_properties(args.command_config))
    config["bootstrap.servers"] = args.bootstrap_server
    config.setdefault("client.id", CLIENT_ID)
    return config


def _require_topic(args: argparse.Namespace, action: str) -> str:
    if not args.topic:
        raise ValueError(f"--topic is required with --{action}")
    return args.topic


def _message(error: Any, topic: str | None) -> str:
    from clients.protocol import ErrorCode

    if error.code == ErrorCode.TOPIC_ALREADY_EXISTS and topic:
        return f"Topic '{topic}' already exists."
    if error.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and topic:
        return f"Topic '{topic}' does not exist as expected"
    return error.message


def _non_default_configs(admin: Any, topic: str) -> dict[str, str | None]:
    """The topic's configs that do not come from the built-in defaults (topic overrides and
    broker settings alike, as kafka-topics.sh shows them); empty if the broker cannot
    describe configs."""
    from clients.protocol import KafkaError

    try:
        entries = admin.describe_configs(topic)
    except KafkaError:
        return {}
    return {name: e.value for name, e in entries.items() if not e.is_default}


def _execute(args: argparse.Namespace, admin: Any) -> list[str]:
    from clients.admin import NewTopic

    if args.create:
        topic = _require_topic(args, "create")
        new = NewTopic(topic, args.partitions if args.partitions is not None else -1,
                       args.replication_factor if args.replication_factor is not None else -1,
                       parse_configs(args.config))
        admin.create_topics([new])
        return [f"Created topic {topic}."]
    if args.list:
        return admin.list_topics(include_internal=not args.exclude_internal)
    if args.describe:
        names = [args.topic] if args.topic else None
        lines: list[str] = []
        for description in admin.describe_topics(names):
            if description.is_internal and args.exclude_internal and not args.topic:
                continue
            configs = {} if args.under_replicated_partitions else _non_default_configs(
                admin, description.name)
            lines += describe_lines(description, configs, args.under_replicated_partitions)
        return lines
    if args.delete:
        admin.delete_topics([_require_topic(args, "delete")])
        return []
    topic = _require_topic(args, "alter")
    if args.partitions is None:
        raise ValueError("--partitions is required with --alter")
    admin.describe_topics([topic])
    admin.create_partitions({topic: args.partitions})
    return []


def run(args: argparse.Namespace) -> int:
    from clients.admin import BlockingAdmin, ConfigError
    from clients.net import KafkaConnectionError
    from clients.protocol import KafkaError, ProtocolError

    try:
        with BlockingAdmin(_admin_config(args)) as admin:
            lines = _execute(args, admin)
    except KafkaError as exc:
        print(ERROR_PREFIX + _message(exc, args.topic), file=sys.stderr)
        return 1
    except (ValueError, ConfigError, KafkaConnectionError, ProtocolError, OSError) as exc:
        print(ERROR_PREFIX + str(exc), file=sys.stderr)
        return 1
    if lines:
        print("\n".join(lines))
    return 0
