"""`raftka acls`: add, remove and list ACLs like kafka-acls.sh (same options, the same
`ResourcePattern(...)` / `(principal=..., ...)` lines, --producer and --consumer
conveniences, a confirmation before removing unless --force)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from clients.cli.admin_tool import Outcome, add_connection_options, run_admin_tool
from clients.cli.main import CommandError

if TYPE_CHECKING:
    from clients.admin.acl_operations import AccessControlEntry, AclBindingFilter

CLIENT_ID = "raftka-acls"
ERROR_PREFIX = "Error while executing ACL command: "
PATTERN_TYPES = ("literal", "prefixed", "any", "match")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("acls", help="add, remove or list ACLs")
    add_connection_options(parser)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--add", action="store_true", help="add ACLs")
    action.add_argument("--remove", action="store_true", help="remove ACLs")
    action.add_argument("--list", action="store_true", help="list ACLs")
    parser.add_argument("--topic", action="append", default=[], help="a topic ('*': all)")
    parser.add_argument("--group", action="append", default=[], help="a consumer group")
    parser.add_argument("--cluster", action="store_true", help="the cluster resource")
    parser.add_argument("--transactional-id", action="append", default=[],
                        help="a transactional id")
    parser.add_argument("--resource-pattern-type", default="literal", type=str.lower,
                        choices=PATTERN_TYPES, metavar="TYPE",
                        help="literal or prefixed (adding); also any or match (listing, "
                             "removing); default literal")
    parser.add_argument("--allow-principal", action="append", default=[], metavar="TYPE:NAME")
    parser.add_argument("--deny-principal", action="append", default=[], metavar="TYPE:NAME")
    parser.add_argument("--allow-host", action="append", default=[], metavar="HOST")
    parser.add_argument("--deny-host", action="append", default=[], metavar="HOST")
    parser.add_argument("--operation", action="append", default=[], metavar="OPERATION",
                        help="e.g. Read, Write, Describe, All (default All)")
    parser.add_argument("--principal", action="append", default=[], metavar="TYPE:NAME",
                        help="with --list: only this principal's ACLs")
    parser.add_argument("--producer", action="store_true",
                        help="WRITE, DESCRIBE, CREATE on --topic (WRITE, DESCRIBE on "
                             "--transactional-id)")
    parser.add_argument("--idempotent", action="store_true",
                        help="with --producer: IDEMPOTENT_WRITE on the cluster")
    parser.add_argument("--consumer", action="store_true",
                        help="READ, DESCRIBE on --topic and READ on --group")
    parser.add_argument("--force", action="store_true", help="remove without asking")
    parser.set_defaults(func=run_acls)


def run_acls(args: argparse.Namespace) -> int:
    _check_args(args)
    return run_admin_tool(args, CLIENT_ID, _execute, ERROR_PREFIX)


def _check_args(args: argparse.Namespace) -> None:
    if args.principal and not args.list:
        raise CommandError("The --principal option is only available if --list is set")
    if args.producer and not args.topic:
        raise CommandError("With --producer you must specify a --topic")
    if args.idempotent and not args.producer:
        raise CommandError("The --idempotent option is only available if --producer is set")
    if args.consumer and (not args.topic or not args.group):
        raise CommandError("With --consumer you must specify a --topic and a --group")
    if (args.producer or args.consumer) and (args.operation or args.deny_principal or args.deny_host):
        raise CommandError("With --producer or --consumer, --operation, --deny-principal and "
                           "--deny-host are not allowed")
    if args.add and args.resource_pattern_type in ("any", "match"):
        raise CommandError(f"A '--resource-pattern-type' value of "
                           f"'{args.resource_pattern_type.upper()}' is not valid when adding acls.")


def _operation(name: str) -> Any:
    from clients.protocol.acl_types import AclOperation

    key = name.strip().replace("-", "").replace("_", "").upper()
    for op in AclOperation:
        if op.name.replace("_", "") == key and op not in (AclOperation.UNKNOWN, AclOperation.ANY):
            return op
    raise ValueError(f"Invalid operation: {name}")


def _operation_name(op: Any) -> str:
    return "".join(part.capitalize() for part in op.name.split("_"))


def _principal(text: str) -> str:
    principal = text.strip()
    kind, sep, name = principal.partition(":")
    if not (sep and kind and name):
        raise ValueError(f"expected a principal in principalType:name format, got {text!r}")
    return principal


def _filters(args: argparse.Namespace, *, required: bool) -> list["AclBindingFilter"]:
    """A filter per named resource (Kafka's getResourceFilter)."""
    from clients.admin.acl_operations import AclBindingFilter
    from clients.protocol.acl_types import CLUSTER_NAME, PatternType, ResourceType

    pattern = PatternType[args.resource_pattern_type.upper()]
    filters = [AclBindingFilter(ResourceType.TOPIC, t.strip(), pattern) for t in args.topic]
    if pattern == PatternType.LITERAL and (args.cluster or args.idempotent):
        filters.append(AclBindingFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL))
    filters += [AclBindingFilter(ResourceType.GROUP, g.strip(), pattern) for g in args.group]
    filters += [AclBindingFilter(ResourceType.TRANSACTIONAL_ID, t, pattern)
                for t in args.transactional_id]
    if not filters and required:
        raise ValueError("You must provide at least one resource: --topic <topic> or --cluster "
                         "or --group <group> or --transactional-id <id>")
    return list(dict.fromkeys(filters))


def _entries(args: argparse.Namespace, operations: list[Any]) -> list["AccessControlEntry"]:
    """The entries of --allow/--deny principals and hosts for `operations` (getAcl)."""
    from clients.admin.acl_operations import AccessControlEntry
    from clients.protocol.acl_types import AclPermissionType

    entries: list[AccessControlEntry] = []
    for principals, hosts, permission in (
            (args.allow_principal, args.allow_host, AclPermissionType.ALLOW),
            (args.deny_principal, args.deny_host, AclPermissionType.DENY)):
        hosts = [h.strip() for h in hosts] or (["*"] if principals else [])
        entries += [AccessControlEntry(_principal(p), h, op, permission)
                    for p in principals for op in operations for h in hosts]
    return sorted(set(entries))


def _filter_to_entries(args: argparse.Namespace) -> dict["AclBindingFilter", list["AccessControlEntry"]]:
    """What to add or remove per resource (Kafka's getResourceFilterToAcls)."""
    from clients.protocol.acl_types import AclOperation as Op, ResourceType

    filters = _filters(args, required=True)
    result: dict[AclBindingFilter, list[AccessControlEntry]] = {}
    if not args.producer and not args.consumer:
        operations = [_operation(o) for o in args.operation] or [Op.ALL]
        result = {f: _entries(args, operations) for f in filters}
    if args.producer:
        for f in filters:
            if f.resource_type == ResourceType.TOPIC:
                result[f] = _entries(args, [Op.WRITE, Op.DESCRIBE, Op.CREATE])
            elif f.resource_type == ResourceType.TRANSACTIONAL_ID:
                result[f] = _entries(args, [Op.WRITE, Op.DESCRIBE])
            elif f.resource_type == ResourceType.CLUSTER and args.idempotent:
                result[f] = _entries(args, [Op.IDEMPOTENT_WRITE])
    if args.consumer:
        for f in filters:
            ops = {ResourceType.TOPIC: [Op.READ, Op.DESCRIBE], ResourceType.GROUP: [Op.READ]}
            if f.resource_type in ops:
                result[f] = sorted(set(result.get(f, []) + _entries(args, ops[f.resource_type])))
    _check_operations(result)
    return result


def _check_operations(result: dict["AclBindingFilter", list["AccessControlEntry"]]) -> None:
    from clients.protocol.acl_types import RESOURCE_OPERATIONS, AclOperation

    for acl_filter, entries in result.items():
        valid = set(RESOURCE_OPERATIONS[acl_filter.resource_type]) | {AclOperation.ALL}
        if any(e.operation not in valid for e in entries):
            names = ", ".join(sorted(_operation_name(op) for op in valid))
            raise ValueError(f"ResourceType {acl_filter.resource_type.name} only supports "
                             f"operations {names}")


def _block(title: str, entries: list[Any]) -> list[str]:
    """Kafka's "<title>: \\n \\t<entry>\\n\\t<entry> \\n" paragraph."""
    body = "\n".join(f"\t{e}" for e in entries)
    return [f"{title}: \n {body} \n"]


def _confirm(args: argparse.Namespace, message: str) -> bool:
    if args.force:
        return True
    print(message, flush=True)
    answer = sys.stdin.readline()
    return answer.strip().lower() == "y"


def _execute(args: argparse.Namespace, admin: Any) -> Outcome:
    from clients.admin.acl_operations import AclBinding, AclBindingFilter, ResourcePattern

    if args.list:
        return _list(args, admin)
    to_change = _filter_to_entries(args)
    lines: list[str] = []
    if args.add:
        if any(not entries for entries in to_change.values()):
            raise ValueError("You must specify one of: --allow-principal, --deny-principal when "
                             "trying to add ACLs.")
        for f, entries in to_change.items():
            pattern = ResourcePattern(f.resource_type, f.name or "", f.pattern_type)
            for line in _block(f"Adding ACLs for resource `{pattern}`", entries):
                print(line, flush=True)
            admin.create_acls([AclBinding(pattern, e) for e in entries])
        return lines
    for f, entries in to_change.items():
        if not entries:
            if _confirm(args, f"Are you sure you want to delete all ACLs for resource filter "
                              f"`{f}`? (y/n)"):
                admin.delete_acls([f])
        else:
            listed = "\n".join(f"\t{e}" for e in entries)
            if _confirm(args, f"Are you sure you want to remove ACLs: \n {listed} \n from "
                              f"resource filter `{f}`? (y/n)"):
                admin.delete_acls([AclBindingFilter(f.resource_type, f.name, f.pattern_type,
                                                    e.principal, e.host, e.operation,
                                                    e.permission_type) for e in entries])
    return lines


def _list(args: argparse.Namespace, admin: Any) -> list[str]:
    from clients.admin.acl_operations import AclBindingFilter

    filters = _filters(args, required=False) or [AclBindingFilter()]
    by_resource: dict[Any, set[Any]] = {}
    for acl_filter in filters:
        for binding in admin.describe_acls(acl_filter):
            by_resource.setdefault(binding.pattern, set()).add(binding.entry)
    lines: list[str] = []
    principals = [_principal(p) for p in args.principal]
    if not principals:
        for pattern, entries in sorted(by_resource.items()):
            lines += _block(f"Current ACLs for resource `{pattern}`", sorted(entries))
        return lines
    for principal in principals:
        lines.append(f"ACLs for principal `{principal}`")
        for pattern, entries in sorted(by_resource.items()):
            mine = sorted(e for e in entries if e.principal == principal)
            if mine:
                lines += _block(f"Current ACLs for resource `{pattern}`", mine)
    return lines
