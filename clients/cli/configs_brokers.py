"""`raftka configs --entity-type brokers`: dynamic broker and cluster-wide configs, as
kafka-configs.sh shows and changes them.

    raftka configs --bootstrap-server H:P --entity-type brokers --entity-name 1 \\
        --alter --add-config leader.replication.throttled.rate=10485760
    raftka configs --bootstrap-server H:P --entity-type brokers --entity-default \\
        --alter --add-config log.cleaner.threads=2 --delete-config log.retention.ms
    raftka configs --bootstrap-server H:P --entity-type brokers [--entity-name 1 |
        --entity-default] --describe [--all]
"""

from __future__ import annotations

import argparse
from typing import Any, Iterable

from clients.cli.admin_tool import Outcome


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options only broker entities use (`--entity-default` may be registered already
    by another entity type; it means the same for all of them)."""
    if "--entity-default" not in parser._option_string_actions:
        parser.add_argument("--entity-default", action="store_true",
                            help="the cluster-wide default (brokers)")
    parser.add_argument("--all", action="store_true",
                        help="with --describe: every config, not only the dynamic ones")


def _broker_id(args: argparse.Namespace) -> int | None:
    if args.entity_default and args.entity_name:
        raise ValueError("--entity-name and --entity-default cannot be used together")
    if args.entity_default:
        return None
    name = args.entity_name
    if name is None:
        raise ValueError("--alter --entity-type brokers needs --entity-name or "
                         "--entity-default")
    if not (name.isascii() and name.isdigit()):
        raise ValueError(f"the entity name for brokers must be a broker id, not {name!r}")
    return int(name)


def split_configs(values: Iterable[str]) -> list[str]:
    """Comma-separated items; a [..] group (a list value) stays one item."""
    items: list[str] = []
    for value in values:
        depth, start = 0, 0
        for i, char in enumerate(value):
            depth += {"[": 1, "]": -1}.get(char, 0)
            if char == "," and depth == 0:
                items.append(value[start:i])
                start = i + 1
        items.append(value[start:])
    return [item.strip() for item in items if item.strip()]


def _changes(args: argparse.Namespace) -> dict[str, str | None]:
    changes: dict[str, str | None] = {}
    for item in split_configs(args.add_config):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--add-config: expected key=value, not {item!r}")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        changes[key.strip()] = value
    for key in split_configs(args.delete_config):
        if key in changes:
            raise ValueError(f"{key} is both added and deleted")
        changes[key] = None
    return changes


def _entry_line(entry: Any) -> str:
    synonyms = ", ".join(f"{s.source}:{s.name}={s.value}" for s in entry.synonyms)
    return (f"  {entry.name}={entry.value} sensitive={str(entry.is_sensitive).lower()} "
            f"synonyms={{{synonyms}}}")


def _describe_one(admin: Any, broker_id: int | None, all_configs: bool) -> list[str]:
    entries = admin.describe_broker_configs(broker_id)
    if broker_id is None:
        header = "Default configs for brokers in the cluster are:"
        shown = [e for e in entries.values() if e.source == "DYNAMIC_DEFAULT_BROKER_CONFIG"]
    elif all_configs:
        header = f"All configs for broker {broker_id} are:"
        shown = list(entries.values())
    else:
        header = f"Dynamic configs for broker {broker_id} are:"
        shown = [e for e in entries.values() if e.source == "DYNAMIC_BROKER_CONFIG"]
    return [header] + [_entry_line(e) for e in sorted(shown, key=lambda e: e.name)]


def execute(args: argparse.Namespace, admin: Any) -> Outcome:
    if args.describe:
        if args.add_config or args.delete_config:
            raise ValueError("--add-config and --delete-config go with --alter")
        if args.entity_default or args.entity_name:
            return _describe_one(admin, _broker_id(args), args.all)
        # No entity: every broker, as kafka-configs.sh does, then the cluster default.
        lines: list[str] = []
        for broker in admin.describe_cluster().brokers:
            lines += _describe_one(admin, broker.node_id, args.all)
        return lines + _describe_one(admin, None, False)
    if args.all:
        raise ValueError("--all goes with --describe")
    broker_id = _broker_id(args)
    changes = _changes(args)
    if not changes:
        raise ValueError("--alter needs --add-config or --delete-config")
    admin.incremental_alter_broker_configs(broker_id, changes)
    if broker_id is None:
        return ["Completed updating default config for brokers in the cluster."]
    return [f"Completed updating config for broker {broker_id}."]
