"""`raftka configs`: Kafka's kafka-configs.sh for users' SCRAM credentials, client quotas
(clients.cli.configs_quotas), broker and cluster-default configs (clients.cli.configs_brokers)
and topic configs.

    raftka configs --bootstrap-server H:P --alter --entity-type users --entity-name alice \\
        --add-config 'SCRAM-SHA-512=[password=alice-secret]'
    raftka configs --bootstrap-server H:P --describe --entity-type users [--entity-name alice]
    raftka configs --bootstrap-server H:P --alter --entity-type users --entity-name alice \\
        --delete-config SCRAM-SHA-512
    raftka configs --bootstrap-server H:P --alter --entity-type topics --entity-name t \\
        --add-config retention.ms=1000 --delete-config cleanup.policy
"""

from __future__ import annotations

import argparse
from typing import Any

from clients.cli import configs_brokers
from clients.cli.admin_tool import Outcome, add_connection_options, run_admin_tool

CLIENT_ID = "raftka-configs"
ENTITY_TYPES = ("users", "topics", "brokers", "clients")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("configs", help="describe or alter SCRAM credentials, client "
                                                   "quotas, broker and topic configs (like "
                                                   "kafka-configs.sh)")
    add_connection_options(parser)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", action="store_true", help="show the configs")
    action.add_argument("--alter", action="store_true", help="add or delete configs")
    # Repeatable: `--entity-type users --entity-name U --entity-type clients --entity-name C`.
    parser.add_argument("--entity-type", required=True, choices=ENTITY_TYPES,
                        action="append", dest="entity_types")
    parser.add_argument("--entity-name", metavar="NAME", action="append", dest="entity_names")
    parser.add_argument("--entity-default", action="append_const", const=None,
                        dest="entity_names", help="the default user or client-id (quotas)")
    parser.add_argument("--add-config", action="append", default=[], metavar="CONFIGS",
                        help="users: 'SCRAM-SHA-256=[iterations=8192,password=secret]'; "
                             "topics: k1=v1,k2=v2")
    parser.add_argument("--delete-config", action="append", default=[], metavar="KEYS",
                        help="users: SCRAM-SHA-256; topics: k1,k2")
    configs_brokers.add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return run_admin_tool(args, CLIENT_ID, execute, "Error: ")


def execute(args: argparse.Namespace, admin: Any) -> Outcome:
    from clients.cli import configs_quotas

    types, names = args.entity_types, args.entity_names or []
    if types == ["brokers"]:
        if len(names) > 1:
            raise ValueError("--entity-type brokers takes one --entity-name or --entity-default")
        # --entity-default is stored as a None name (it is shared with client quotas).
        args.entity_type, args.entity_default = "brokers", names == [None]
        args.entity_name = names[0] if names else None
        return configs_brokers.execute(args, admin)
    if args.alter and not (args.add_config or args.delete_config):
        raise ValueError("--alter needs --add-config or --delete-config")
    if configs_quotas.wants_quotas(types, names, args.add_config, args.delete_config):
        return configs_quotas.execute(args, admin, types, names, _split(args.add_config),
                                      _split(args.delete_config))
    if len(types) > 1 or len(names) > 1:
        raise ValueError("--entity-type and --entity-name may repeat only for client quotas")
    args.entity_type, args.entity_name = types[0], (names[0] if names else None)
    if args.alter and not args.entity_name:
        raise ValueError("--alter needs --entity-name")
    if args.describe and (args.add_config or args.delete_config):
        raise ValueError("--add-config and --delete-config go with --alter")
    if args.entity_type == "users":
        return _users(args, admin)
    return _topics(args, admin)


def _split(values: list[str]) -> list[str]:
    """Comma-separated items, keeping a [..] group (with its commas) as one item."""
    items: list[str] = []
    for value in values:
        depth, start = 0, 0
        for i, char in enumerate(value):
            if char == "[":
                depth += 1
            elif char == "]":
                depth -= 1
            elif char == "," and depth == 0:
                items.append(value[start:i])
                start = i + 1
        items.append(value[start:])
    return [item.strip() for item in items if item.strip()]


def _users(args: argparse.Namespace, admin: Any) -> Outcome:
    from clients.cli.scram_args import ScramArgumentError, parse_scram_argument

    if args.describe:
        from clients.cli.configs_quotas import describe_lines
        from clients.protocol import ErrorCode, KafkaError

        # As kafka-configs.sh: a user's quotas, then its SCRAM credentials.
        names = [args.entity_name] if args.entity_name else None
        quotas = describe_lines(admin, ["users"], names or [])
        try:
            described = admin.describe_scram_credentials(names)
        except KafkaError as exc:
            if not quotas or exc.code != ErrorCode.RESOURCE_NOT_FOUND:
                raise
            described = {}
        return quotas + [
            f"SCRAM credential configs for user-principal '{user}' are "
            + ", ".join(f"{mechanism}=iterations={iterations}"
                        for mechanism, iterations in infos)
            for user, infos in sorted(described.items())]
    user = args.entity_name
    upserts = []
    for text in _split(args.add_config):
        try:
            upserts.append(parse_scram_argument(text, need_name=False))
        except ScramArgumentError as exc:
            raise ValueError(f"--add-config: {exc}") from None
    deletions = _split(args.delete_config)
    for mechanism in deletions:
        admin.delete_scram_credential(user, mechanism)
    for upsert in upserts:
        admin.upsert_scram_credential(user, upsert.mechanism, upsert.password,
                                      upsert.iterations)
    return [f"Completed updating config for user {user}."]


def _topics(args: argparse.Namespace, admin: Any) -> Outcome:
    if args.describe:
        if not args.entity_name:
            raise ValueError("--describe --entity-type topics needs --entity-name")
        entries = admin.describe_configs(args.entity_name)
        dynamic = [e for e in entries.values() if e.source == "DYNAMIC_TOPIC_CONFIG"]
        body = ",".join(f"{e.name}={e.value}" for e in sorted(dynamic, key=lambda e: e.name))
        return [f"Dynamic configs for topic {args.entity_name} are:"
                + (f" {body}" if body else "")]
    changes: dict[str, str | None] = {}
    for item in _split(args.add_config):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--add-config: expected key=value, not {item!r}")
        changes[key.strip()] = value.strip()
    for key in _split(args.delete_config):
        changes[key] = None
    admin.incremental_alter_configs(args.entity_name, changes)
    return [f"Completed updating config for topic {args.entity_name}."]
