"""`raftka topics`: create, list, describe, alter and delete topics, like kafka-topics.sh.

Output follows Kafka 4.0's TopicCommand, including the (always empty here) `Elr` and
`LastKnownElr` columns of `--describe`. `--topic` is a regular expression for describe,
alter and delete, as there. `--alter --config/--delete-config` change topic configs through
IncrementalAlterConfigs and print kafka-configs.sh's `Completed updating config for topic T.`
Errors print `Error while executing topic command : <message>` on stderr and exit 1.
"""

from __future__ import annotations

import argparse
import base64
from typing import Any, Sequence

from clients.cli.admin_tool import add_connection_options, run_admin_tool

CLIENT_ID = "raftka-topics"
ERROR_PREFIX = "Error while executing topic command : "
INT32_MAX = 2**31 - 1
INT16_MAX = 2**15 - 1


def int32_arg(text: str) -> int:
    """An argparse type: an integer the protocol's int32 fields can carry (Kafka's tool
    parses these options as Java ints)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if not -INT32_MAX - 1 <= value <= INT32_MAX:
        raise argparse.ArgumentTypeError(
            f"{text} is out of range (a 32-bit integer, at most {INT32_MAX})")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("topics", help="create, list, describe, alter or delete "
                                   "topics (like kafka-topics.sh)")
    add_connection_options(parser)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--create", action="store_true", help="create a topic")
    action.add_argument("--list", action="store_true", help="list the topics")
    action.add_argument("--describe", action="store_true", help="describe topics")
    action.add_argument("--delete", action="store_true", help="delete a topic")
    action.add_argument("--alter", action="store_true",
                        help="raise a topic's partition count, set or delete its configs")
    parser.add_argument("--topic", metavar="TOPIC",
                        help="the topic; with --describe, --alter and --delete a regular "
                             "expression matching whole names (a,b means a or b)")
    parser.add_argument("--partitions", type=int32_arg, metavar="N")
    parser.add_argument("--replication-factor", type=int32_arg, metavar="R",
                        help=f"with --create: 1 to {INT16_MAX} (default: the cluster's "
                             "default.replication.factor)")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="a topic config for --create or to set with --alter "
                             "(repeatable)")
    parser.add_argument("--delete-config", action="append", default=[], metavar="KEY",
                        help="with --alter: a topic config to remove, back to its default "
                             "(repeatable)")
    parser.add_argument("--if-exists", action="store_true",
                        help="with --alter, --delete or --describe: do nothing, "
                             "successfully, when no topic matches")
    parser.add_argument("--if-not-exists", action="store_true",
                        help="with --create: do nothing, successfully, if the topic exists")
    parser.add_argument("--under-replicated-partitions", action="store_true",
                        help="with --describe: only partitions whose ISR is smaller than "
                             "their replica set")
    parser.add_argument("--exclude-internal", action="store_true",
                        help="with --list or --describe: leave out internal topics")
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

def _require_topic(args: argparse.Namespace, action: str) -> str:
    if not args.topic:
        raise ValueError(f"--topic is required with --{action}")
    return args.topic


def check_options(args: argparse.Namespace) -> None:
    """Kafka's TopicCommand option checks: each option only with the actions it serves."""
    if args.if_not_exists and not args.create:
        raise ValueError("--if-not-exists can only be used with --create")
    if args.if_exists and not (args.alter or args.delete or args.describe):
        raise ValueError("--if-exists can only be used with --alter, --delete or --describe")
    if args.delete_config and not args.alter:
        raise ValueError("--delete-config can only be used with --alter")
    if args.config and not (args.create or args.alter):
        raise ValueError("--config can only be used with --create or --alter")
    if args.topic and not (args.create or args.list):
        from clients.cli.topic_pattern import compile_topic_pattern
        compile_topic_pattern(args.topic)  # a bad pattern fails before the cluster is asked


def check_create_counts(partitions: int | None, replication_factor: int | None) -> None:
    """Kafka's TopicCommand checks of --create's counts, made before the cluster is asked."""
    if replication_factor is not None and not 1 <= replication_factor <= INT16_MAX:
        raise ValueError(f"The replication factor must be between 1 and {INT16_MAX} inclusive")
    if partitions is not None and partitions < 1:
        raise ValueError("The partitions must be greater than 0")


def _matching(args: argparse.Namespace, described: list[Any], action: str) -> list[Any]:
    """The topics `--topic` matches, as Kafka's tools: an error naming the pattern when
    none does, unless --if-exists."""
    from clients.cli.topic_pattern import compile_topic_pattern, matching_topics

    pattern = compile_topic_pattern(_require_topic(args, action))
    by_name = {d.name: d for d in described}
    names = matching_topics(pattern, by_name, args.exclude_internal,
                            [d.name for d in described if d.is_internal])
    if not names and not args.if_exists:
        raise ValueError(f"Topic '{args.topic}' does not exist as expected")
    return [by_name[name] for name in names]


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
    from clients.protocol import ErrorCode, KafkaError

    check_options(args)
    if args.create:
        topic = _require_topic(args, "create")
        check_create_counts(args.partitions, args.replication_factor)
        new = NewTopic(topic, args.partitions if args.partitions is not None else -1,
                       args.replication_factor if args.replication_factor is not None else -1,
                       parse_configs(args.config))
        try:
            admin.create_topics([new])
        except KafkaError as exc:
            if args.if_not_exists and exc.code == ErrorCode.TOPIC_ALREADY_EXISTS:
                return []
            raise
        return [f"Created topic {topic}."]
    if args.list:
        return admin.list_topics(include_internal=not args.exclude_internal)
    if args.describe:
        described = admin.describe_topics()
        if args.topic:
            described = _matching(args, described, "describe")
        lines: list[str] = []
        for description in described:
            if description.is_internal and args.exclude_internal:
                continue
            configs = {} if args.under_replicated_partitions else _non_default_configs(
                admin, description.name)
            lines += describe_lines(description, configs, args.under_replicated_partitions)
        return lines
    matched = _matching(args, admin.describe_topics(), "delete" if args.delete else "alter")
    names = [d.name for d in matched]
    if args.delete:
        internal = [d.name for d in matched if d.is_internal]
        if internal:
            raise ValueError(f"Topic {internal[0]} is a kafka internal topic and is not "
                             "allowed to be marked for deletion.")
        if names:
            admin.delete_topics(names)
        return []
    return _alter(args, admin, names)


def _alter(args: argparse.Namespace, admin: Any, topics: list[str]) -> list[str]:
    """--alter: raise partition counts, then set and delete configs
    (IncrementalAlterConfigs, as kafka-configs.sh)."""
    changes: dict[str, str | None] = dict(parse_configs(args.config))
    for key in args.delete_config:
        if key.strip() in changes:
            raise ValueError(f"Invalid alter config: {key.strip()!r} is both set and deleted")
        changes[key.strip()] = None
    if args.partitions is None and not changes:
        raise ValueError("--alter needs --partitions, --config or --delete-config")
    lines: list[str] = []
    if args.partitions is not None and topics:
        admin.create_partitions({topic: args.partitions for topic in topics})
    for topic in topics if changes else []:
        admin.incremental_alter_configs(topic, changes)
        lines.append(f"Completed updating config for topic {topic}.")
    return lines


def run(args: argparse.Namespace) -> int:
    return run_admin_tool(args, CLIENT_ID, _execute, ERROR_PREFIX,
                          lambda exc: _message(exc, args.topic))
