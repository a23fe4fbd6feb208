"""`raftka reassign-partitions`: move partition replicas between brokers, like
kafka-reassign-partitions.sh.

Exactly one action: `--generate` (propose a plan for the topics of
`--topics-to-move-json-file` over `--broker-list`), `--execute` (start the reassignments of
`--reassignment-json-file`, optionally `--throttle`d), `--verify` (report progress; once
nothing moves, remove the throttles), `--cancel`, or `--list`. The JSON files and the lines
printed are Kafka's; an error is one line on stderr and exit 1.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

from broker.cli import reassignment_plan as plan
from clients.cli.admin_tool import add_connection_options, run_admin_tool
from broker.cli.reassignment_json import (Assignment, ReassignmentInputError, TopicPartition,
                                          format_reassignment, parse_broker_list,
                                          parse_reassignment, parse_topics_to_move)

CLIENT_ID = "reassign-partitions-tool"
ERROR_PREFIX = "Error: "
ACTION_HELP = {
    "generate": "propose a plan moving the topics of --topics-to-move-json-file onto "
                "--broker-list (changes nothing)",
    "execute": "start the reassignments of --reassignment-json-file",
    "verify": "report the progress of --reassignment-json-file; once nothing moves, "
              "remove the throttles",
    "cancel": "cancel the running reassignments of --reassignment-json-file",
    "list": "list the running reassignments",
}
ACTIONS = tuple(ACTION_HELP)
EXISTING_REASSIGNMENT = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to "
    "override this and create a new partition assignment in addition to the existing one. "
    "The --additional flag can also be used to change the throttle by resubmitting the "
    "current reassignment.")
VERIFY_REMINDER = ("Warning: You must run --verify periodically, until the reassignment "
                   "completes, to ensure the throttle is removed.")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "reassign-partitions",
        help="move partition replicas between brokers (like kafka-reassign-partitions.sh)")
    add_connection_options(parser)
    for action, text in ACTION_HELP.items():
        parser.add_argument(f"--{action}", action="store_true", help=text)
    parser.add_argument("--topics-to-move-json-file", metavar="FILE",
                        help='with --generate: {"version":1,"topics":[{"topic":"t"}]}')
    parser.add_argument("--broker-list", metavar="1,2,3",
                        help="with --generate: the brokers to place the replicas on")
    parser.add_argument("--disable-rack-aware", action="store_true",
                        help="with --generate: ignore the brokers' racks")
    parser.add_argument("--reassignment-json-file", metavar="FILE",
                        help='{"version":1,"partitions":[{"topic":"t","partition":0,'
                             '"replicas":[1,2,3]}]}')
    parser.add_argument("--throttle", type=int, default=-1, metavar="BYTES_PER_S",
                        help="with --execute: cap replication traffic of the moving "
                             "partitions on each broker involved")
    parser.add_argument("--additional", action="store_true",
                        help="with --execute: start even while other reassignments run")
    parser.add_argument("--preserve-throttles", action="store_true",
                        help="with --verify or --cancel: leave the throttles in place")
    parser.add_argument("--timeout", type=int, default=10_000, metavar="MS",
                        help="how long the cluster may take to answer (default 10000)")
    parser.set_defaults(func=run)


def chosen_action(args: argparse.Namespace) -> str:
    """The one action of the command line; ValueError naming what is missing or extra."""
    actions = [a for a in ACTIONS if getattr(args, a)]
    if len(actions) != 1:
        raise ReassignmentInputError("Command must include exactly one action: "
                                     + ", ".join(f"--{a}" for a in ACTIONS))
    action = actions[0]
    needs = {"generate": ("topics_to_move_json_file", "broker_list"),
             "execute": ("reassignment_json_file",), "verify": ("reassignment_json_file",),
             "cancel": ("reassignment_json_file",), "list": ()}[action]
    missing = [n for n in needs if getattr(args, n) is None]
    if missing:
        raise ReassignmentInputError(
            "Missing required argument(s) for --" + action + ": "
            + ", ".join("--" + n.replace("_", "-") for n in missing))
    if args.throttle >= 0 and action != "execute":
        raise ReassignmentInputError(f"Option \"--throttle\" can't be used with action "
                                     f"\"--{action}\"")
    return action


def _read(path: str) -> str:
    from clients.common import properties

    try:
        return properties.decode_utf8(Path(path).read_bytes())
    except OSError as exc:
        raise ReassignmentInputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ReassignmentInputError(f"{path}: {exc}") from None


# ---- what the cluster says ----

def _replicas_of(admin: Any, topics: set[str], must_exist: bool = True
                 ) -> dict[TopicPartition, tuple[int, ...]]:
    """The replicas of every partition of `topics`; a missing topic is an error unless
    `must_exist` is false (then it is left out)."""
    from clients.protocol import ErrorCode, KafkaError

    current: dict[TopicPartition, tuple[int, ...]] = {}
    for topic in sorted(topics):
        try:
            described = admin.describe_topics([topic])
        except KafkaError as exc:
            if exc.code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                raise
            if must_exist:
                raise ReassignmentInputError(f"Topic {topic} not found.") from None
            continue
        for description in described:
            for info in description.partitions:
                current[(topic, info.partition)] = tuple(info.replicas)
    return current


def _ongoing(admin: Any, timeout_ms: int, partitions: list[TopicPartition] | None = None
             ) -> dict[TopicPartition, Any]:
    """The reassignments in progress (of `partitions`, or all), by partition."""
    return {(r.topic, r.partition): r
            for r in admin.list_partition_reassignments(partitions, timeout_ms=timeout_ms)}


def _registered_brokers(admin: Any) -> dict[int, str | None]:
    return {b.node_id: b.rack for b in admin.describe_cluster().brokers}


# ---- the actions ----

def _generate(args: argparse.Namespace, admin: Any) -> list[str]:
    brokers = parse_broker_list(args.broker_list)
    topics = parse_topics_to_move(_read(args.topics_to_move_json_file))
    current = _replicas_of(admin, set(topics))
    usable = plan.brokers_for_plan(brokers, _registered_brokers(admin),
                                   rack_aware=not args.disable_rack_aware)
    proposed = plan.propose_assignment(current, usable, random.Random())
    return ["Current partition replica assignment", format_reassignment(current), "",
            "Proposed partition reassignment configuration", format_reassignment(proposed)]


def _execute(args: argparse.Namespace, admin: Any) -> tuple[list[str], int]:
    targets = parse_reassignment(_read(args.reassignment_json_file))
    ongoing = _ongoing(admin, args.timeout)
    if ongoing and not args.additional:
        raise ReassignmentInputError(EXISTING_REASSIGNMENT)
    registered = _registered_brokers(admin)
    unknown = sorted({b for replicas in targets.values() for b in replicas} - set(registered))
    if unknown:
        raise ReassignmentInputError(f"Unknown broker id {unknown[0]}")
    current = _replicas_of(admin, {tp[0] for tp in targets})
    missing = sorted(tp for tp in targets if tp not in current)
    if missing:
        raise ReassignmentInputError("Unable to find partition: "
                                     + ", ".join(f"{t}-{p}" for t, p in missing))
    print("Current partition replica assignment\n")
    print(format_reassignment({tp: current[tp] for tp in targets}))
    print("\nSave this to use as the --reassignment-json-file option during rollback")
    if args.throttle >= 0:
        print(VERIFY_REMINDER)
        moves = plan.proposed_moves(targets, current,
                                    {tp: (r.replicas, r.adding) for tp, r in ongoing.items()})
        _set_throttles(admin, moves, args.throttle)
        print(f"The inter-broker throttle limit was set to {args.throttle} B/s")
    return _start(admin, targets, args.timeout)


def _set_throttles(admin: Any, moves: dict[TopicPartition, plan.PartitionMove],
                   rate: int) -> None:
    for topic, changes in sorted(plan.topic_throttles(moves).items()):
        admin.incremental_alter_configs(topic, changes)
    for broker in plan.reassigning_brokers(moves):
        admin.incremental_alter_broker_configs(
            broker, {key: str(rate) for key in plan.BROKER_THROTTLES})


def _start(admin: Any, targets: Assignment, timeout_ms: int) -> tuple[list[str], int]:
    results = admin.alter_partition_reassignments(
        {tp: list(replicas) for tp, replicas in targets.items()}, timeout_ms=timeout_ms)
    failed = _failures(results)
    if failed:
        raise ReassignmentInputError("Error reassigning partition(s): " + failed)
    return [f"Successfully started partition reassignment{plan.plural(len(targets))} for "
            f"{plan.partitions_text(targets)}"], 0


def _failures(results: list[Any]) -> str:
    """The failed partitions of an AlterPartitionReassignments, on one line."""
    from clients.protocol.errors import ErrorCode

    failed = sorted((r for r in results if r.error_code != 0),
                    key=lambda r: (r.topic, r.partition))
    return "; ".join(
        f"{r.topic}-{r.partition}: {ErrorCode.from_code(r.error_code).name}: "
        f"{r.error_message or ErrorCode.from_code(r.error_code).message}" for r in failed)


def _verify(args: argparse.Namespace, admin: Any) -> list[str]:
    targets = parse_reassignment(_read(args.reassignment_json_file))
    ongoing = _ongoing(admin, args.timeout)
    current = _replicas_of(admin, {tp[0] for tp in targets if tp not in ongoing},
                           must_exist=False)
    lines = plan.verify_lines(targets, ongoing, current)
    if not ongoing and not args.preserve_throttles:
        lines += _clear_throttles(admin, targets)
    return lines


def _clear_throttles(admin: Any, targets: Assignment) -> list[str]:
    """Remove every reassignment throttle: on all brokers (the earlier sources of a move are
    not known any more) and on the targets' topics."""
    registered = set(_registered_brokers(admin))
    brokers = registered | {b for r in targets.values() for b in r}
    topics = {tp[0] for tp in targets}
    lines = plan.clearing_lines(brokers, topics)
    for broker in sorted(brokers & registered):
        admin.incremental_alter_broker_configs(broker, dict.fromkeys(plan.BROKER_THROTTLES))
    existing = set(admin.list_topics(include_internal=False))
    for topic in sorted(topics & existing):
        admin.incremental_alter_configs(topic, dict.fromkeys(plan.TOPIC_THROTTLES))
    return lines


def _cancel(args: argparse.Namespace, admin: Any) -> list[str]:
    targets = parse_reassignment(_read(args.reassignment_json_file))
    ongoing = _ongoing(admin, args.timeout, sorted(targets))
    chosen = plan.cancellable({tp: (r.adding, r.removing) for tp, r in ongoing.items()},
                              targets)
    lines: list[str] = []
    if chosen:
        results = admin.alter_partition_reassignments(dict.fromkeys(chosen),
                                                      timeout_ms=args.timeout)
        failed = _failures(results)
        if failed:
            raise ReassignmentInputError(
                f"Error cancelling partition reassignment{plan.plural(len(chosen))} for: "
                + failed)
        lines.append(f"Successfully cancelled partition reassignment{plan.plural(len(chosen))}"
                     f" for: {plan.partitions_text(chosen)}")
    else:
        lines.append("None of the specified partition reassignments are active.")
    if not args.preserve_throttles:
        lines += _clear_throttles(admin, targets)
    return lines


def _list(args: argparse.Namespace, admin: Any) -> list[str]:
    return plan.list_lines({tp: (r.replicas, r.adding, r.removing)
                            for tp, r in _ongoing(admin, args.timeout).items()})


def _run_action(args: argparse.Namespace, admin: Any) -> list[str] | tuple[list[str], int]:
    action = {"generate": _generate, "execute": _execute, "verify": _verify,
              "cancel": _cancel, "list": _list}[chosen_action(args)]
    return action(args, admin)


def run(args: argparse.Namespace) -> int:
    try:
        chosen_action(args)  # a bad command line fails before connecting
    except ReassignmentInputError as exc:
        print(ERROR_PREFIX + str(exc), file=sys.stderr)
        return 1
    return run_admin_tool(args, CLIENT_ID, _run_action, ERROR_PREFIX)
