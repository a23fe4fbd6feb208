"""`raftka groups`: list, describe, reset offsets of and delete consumer groups, like
kafka-consumer-groups.sh (same options, columns and messages where they apply)."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TYPE_CHECKING, Callable, Mapping

from clients.cli.admin_tool import (
    add_command_config,
    add_timeout_option,
    api_timeout_ms,
    command_config,
)
from clients.cli.main import CommandError

if TYPE_CHECKING:
    from clients.admin import BlockingAdmin
    from clients.admin.group_operations import GroupDescription

logger = logging.getLogger(__name__)

CLIENT_ID = "raftka-consumer-groups"
DEFAULT_TIMEOUT_S = 30.0
EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1


def _described(admin: "BlockingAdmin", group: str) -> "GroupDescription":
    from clients.protocol import KafkaError

    described = admin.describe_groups([group])[group]
    if isinstance(described, KafkaError):
        raise described
    return described


def _coordinator_address(admin: "BlockingAdmin", node_id: int) -> str:
    """Kafka's "host:port (id)" of the group's coordinator."""
    broker = next((b for b in admin.describe_cluster().brokers if b.node_id == node_id), None)
    address = "-" if broker is None else f"{broker.host}:{broker.port}"
    return f"{address} ({node_id})"


def _partitions_of(admin: "BlockingAdmin", topic: str) -> list[int]:
    (described,) = admin.describe_topics([topic])
    return sorted(p.partition for p in described.partitions)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("groups", help="list, describe, reset or delete consumer groups")
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]")
    add_command_config(parser)
    add_timeout_option(parser)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true", help="list every group")
    action.add_argument("--describe", action="store_true", help="describe --group")
    action.add_argument("--reset-offsets", action="store_true",
                        help="reset --group's committed offsets of --topic")
    action.add_argument("--delete", action="store_true", help="delete --group")
    action.add_argument("--delete-offsets", action="store_true",
                        help="delete --group's committed offsets of each --topic")
    parser.add_argument("--group", help="the consumer group")
    parser.add_argument("--topic", action="append",
                        help="a topic to reset or whose offsets to delete (TOPIC or "
                             "TOPIC:P1,P2); may be repeated")
    view = parser.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true", help="with --describe: the members")
    view.add_argument("--state", action="store_true", help="with --describe: the group state")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--to-earliest", action="store_true")
    target.add_argument("--to-latest", action="store_true")
    target.add_argument("--to-offset", type=int, metavar="N")
    target.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss")
    target.add_argument("--shift-by", type=int, metavar="N")
    run_mode = parser.add_mutually_exclusive_group()
    run_mode.add_argument("--dry-run", action="store_true", help="show the new offsets only")
    run_mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                        help=f"seconds per request (default {DEFAULT_TIMEOUT_S:.0f})")
    parser.set_defaults(func=run_groups)


def run_groups(args: argparse.Namespace) -> int:
    from clients.admin import BlockingAdmin, ConfigError
    from clients.net import KafkaConnectionError
    from clients.protocol import KafkaError

    if not args.list and not args.group:
        raise CommandError("--group is required with --describe, --reset-offsets, --delete "
                           "and --delete-offsets")
    if args.delete_offsets and not args.topic:
        raise CommandError("--delete-offsets needs --topic")
    error: str | None = None
    try:
        with BlockingAdmin({"client.id": CLIENT_ID, **command_config(args),
                            "bootstrap.servers": args.bootstrap_server,
                            "request.timeout.ms": int(args.timeout * 1000),
                            "default.api.timeout.ms": api_timeout_ms(args)}) as admin:
            if args.list:
                out = "\n".join(listing.group_id for listing in admin.list_groups())
            elif args.describe:
                out = _describe(admin, args.group, members=args.members, state=args.state)
            elif args.delete:
                admin.delete_groups([args.group])
                out = f"Deletion of requested consumer groups ('{args.group}') was successful."
            elif args.delete_offsets:
                from clients.cli.groups_delete_offsets import delete_offsets

                lines, error = delete_offsets(admin, args.group, args.topic)
                out = "\n".join(lines)
            else:
                out = _reset(admin, args)
    except (ConfigError, KafkaConnectionError, KafkaError, OSError) as exc:
        raise CommandError(str(exc)) from None
    if out:
        sys.stdout.write(out + "\n")
    if error is not None:
        sys.stderr.write(error + "\n")
        return 1
    return 0


def _state_note(group: str, state: str) -> str | None:
    """What kafka-consumer-groups.sh tells stderr about a group's state, if anything."""
    if state == "Dead":
        return f"Error: Consumer group '{group}' does not exist."
    if state == "Empty":
        return f"\nConsumer group '{group}' has no active members."
    if state in ("PreparingRebalance", "CompletingRebalance"):
        return f"\nWarning: Consumer group '{group}' is rebalancing."
    return None


def _describe(admin: "BlockingAdmin", group: str, *, members: bool, state: bool) -> str:
    from clients.cli.groups_view import (
        DESCRIBE_MEMBERS_HEADER,
        DESCRIBE_OFFSETS_HEADER,
        DESCRIBE_STATE_HEADER,
        format_table,
        offset_rows,
    )

    described = _described(admin, group)
    rows = described.members
    note = _state_note(group, described.state)
    if note is not None:
        sys.stderr.write(note + "\n")
    if described.state == "Dead":
        return ""
    if state:
        return "\n" + format_table(DESCRIBE_STATE_HEADER, [(
            group, _coordinator_address(admin, described.coordinator_id),
            described.protocol or "", described.state, str(len(rows)))])
    if members:
        if not rows:
            return ""
        return "\n" + format_table(DESCRIBE_MEMBERS_HEADER, [
            (group, m.member_id, m.host, m.client_id, str(len(m.assignment))) for m in rows])
    committed = admin.list_group_offsets(group)
    partitions = set(committed) | {tp for m in rows for tp in m.assignment}
    if not partitions:
        return ""
    log_end = _offsets(admin, {tp: LATEST_TIMESTAMP for tp in partitions})
    return "\n" + format_table(DESCRIBE_OFFSETS_HEADER,
                                offset_rows(group, committed, log_end, rows))


def _offsets(admin: "BlockingAdmin", timestamps: Mapping[tuple[str, int], int], *,
             require_all: bool = False) -> dict[tuple[str, int], int]:
    """Partition offsets by time (ListOffsets at each leader). A partition without one (no
    such partition, no leader, an error; by time: no record that late) is left out and
    logged, or with `require_all` raises ValueError naming it and why."""
    from clients.protocol import ErrorCode, KafkaError

    reasons = {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "no such partition",
               ErrorCode.LEADER_NOT_AVAILABLE: "no leader"}
    found: dict[tuple[str, int], int] = {}
    missing: dict[tuple[str, int], str] = {}
    for tp, listed in admin.list_offsets(timestamps).items():
        if isinstance(listed, KafkaError):
            missing[tp] = reasons.get(listed.code, listed.code.name)
        elif listed is None:
            missing[tp] = "no record at or after that time"
        else:
            found[tp] = listed.offset
    if missing:
        described = ", ".join(f"{t}-{p} ({why})" for (t, p), why in sorted(missing.items()))
        if require_all:
            raise ValueError(f"no offset for {described}")
        logger.warning("no offset for %s", described)
    return found


def _target_function(args: argparse.Namespace, admin: "BlockingAdmin") -> Callable[
        [tuple[str, int], int | None, int, int], int]:
    from clients.cli.groups_view import clamp, parse_datetime_ms, shifted

    if args.to_earliest:
        return lambda tp, current, earliest, latest: earliest
    if args.to_latest:
        return lambda tp, current, earliest, latest: latest
    if args.to_offset is not None:
        return lambda tp, current, earliest, latest: clamp(args.to_offset, earliest, latest)
    if args.shift_by is not None:
        return lambda tp, current, earliest, latest: shifted(current, args.shift_by, earliest,
                                                             latest)
    if args.to_datetime is not None:
        try:
            timestamp = parse_datetime_ms(args.to_datetime)
        except ValueError:
            raise CommandError(f"cannot parse --to-datetime {args.to_datetime!r}") from None

        def by_time(tp: tuple[str, int], current: int | None, earliest: int, latest: int) -> int:
            found = _offsets(admin, {tp: timestamp}).get(tp, -1)
            return latest if found < 0 else clamp(found, earliest, latest)

        return by_time
    raise CommandError("--reset-offsets needs one of --to-earliest, --to-latest, --to-offset, "
                       "--to-datetime or --shift-by")


def _reset(admin: "BlockingAdmin", args: argparse.Namespace) -> str:
    from clients.cli.groups_view import INACTIVE_STATES, RESET_HEADER, format_table

    if not args.topic:
        raise CommandError("--reset-offsets needs --topic")
    if not (args.dry_run or args.execute):
        raise CommandError("--reset-offsets needs --dry-run or --execute")
    target = _target_function(args, admin)
    group = args.group
    described = _described(admin, group)
    if described.state not in INACTIVE_STATES:
        raise CommandError(f"Assignments can only be reset if the group '{group}' is inactive, "
                           f"but the current state is {described.state}.")
    partitions: list[tuple[str, int]] = []
    for value in args.topic:
        topic, _, listed = value.partition(":")
        partitions += ([(topic, int(p)) for p in listed.split(",") if p.strip()] if listed
                       else [(topic, p) for p in _partitions_of(admin, topic)])
    try:
        # Every target is bounded by these: without them nothing is committed (a guess such
        # as 0 would silently move the group back to the start).
        earliest = _offsets(admin, {tp: EARLIEST_TIMESTAMP for tp in partitions},
                            require_all=True)
        latest = _offsets(admin, {tp: LATEST_TIMESTAMP for tp in partitions},
                          require_all=True)
    except ValueError as exc:
        raise CommandError(f"cannot reset the offsets of group '{group}', nothing was "
                           f"committed: {exc}") from None
    committed = admin.list_group_offsets(group)
    new: dict[tuple[str, int], int] = {
        tp: target(tp, committed.get(tp), earliest[tp], latest[tp]) for tp in partitions}
    if args.execute:
        admin.alter_group_offsets(group, new)
    return format_table(RESET_HEADER, [(group, t, str(p), str(o))
                                       for (t, p), o in sorted(new.items())])
