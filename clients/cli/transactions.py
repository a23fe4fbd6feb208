"""`raftka transactions`: list, describe and abort transactions and find hanging ones, like
kafka-transactions.sh (same subcommands, options and tables).

`--list`, `--describe`, `--describe-producers`, `--abort` and `--find-hanging` are accepted
as spellings of the subcommands.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Sequence

from clients.cli.admin_tool import DEFAULT_API_TIMEOUT_MS, api_timeout_ms
from clients.cli.main import CommandError
from clients.clock import wall_clock_ms

if TYPE_CHECKING:
    from clients.admin import BlockingAdmin
    from clients.admin.transaction_operations import AbortTransactionSpec, ProducerState

CLIENT_ID = "raftka-transactions"
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN = 15

LIST_HEADER = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADER = ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch",
                   "TransactionState", "TransactionTimeoutMs", "CurrentTransactionStartTimeMs",
                   "TransactionDurationMs", "TopicPartitions")
PRODUCERS_HEADER = ("ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
                    "LastTimestamp", "CurrentTransactionStartOffset")
HANGING_HEADER = ("Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
                  "StartOffset", "LastTimestamp", "Duration(min)")
SUBCOMMANDS = ("list", "describe", "describe-producers", "abort", "find-hanging")


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Kafka's tool table: each column padded to its widest cell and ended by a tab."""
    widths = [max([len(header[i])] + [len(r[i]) for r in rows]) for i in range(len(header))]
    return "\n".join("".join(cell.ljust(width) + "\t" for cell, width in zip(row, widths))
                     for row in [header, *rows])


def normalize_argv(argv: Sequence[str]) -> list[str]:
    """`raftka transactions ... --list` read as `raftka transactions ... list`."""
    out = list(argv)
    if "transactions" not in out:
        return out
    for i in range(out.index("transactions") + 1, len(out)):
        if out[i].startswith("--") and out[i][2:] in SUBCOMMANDS:
            out[i] = out[i][2:]
            break
    return out


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "transactions", help="list, describe, abort and find hanging transactions")
    _connection_options(parser, argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="subcommand", metavar="SUBCOMMAND", required=True)
    listing = commands.add_parser("list", help="list transactions")
    describe = commands.add_parser("describe", help="describe the state of an active "
                                                    "transactional id")
    describe.add_argument("--transactional-id", required=True)
    producers = commands.add_parser("describe-producers",
                                    help="describe the active producers of a partition")
    producers.add_argument("--topic", required=True)
    producers.add_argument("--partition", type=int, required=True)
    producers.add_argument("--broker-id", type=int,
                           help="describe the producer state on this replica (default: the "
                                "leader)")
    abort = commands.add_parser("abort", help="abort a hanging transaction (with a marker "
                                              "written by the partition's leader)")
    abort.add_argument("--topic", required=True)
    abort.add_argument("--partition", type=int, required=True)
    abort.add_argument("--start-offset", type=int,
                       help="the first offset of the transaction to abort")
    abort.add_argument("--producer-id", type=int)
    abort.add_argument("--producer-epoch", type=int)
    abort.add_argument("--coordinator-epoch", type=int)
    hanging = commands.add_parser("find-hanging", help="find hanging transactions")
    hanging.add_argument("--broker-id", type=int, help="the broker whose partitions to check")
    hanging.add_argument("--topic")
    hanging.add_argument("--partition", type=int)
    hanging.add_argument("--max-transaction-timeout", type=int,
                         default=DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN, metavar="MINUTES",
                         help="transactions open longer than this are candidates "
                              f"(default {DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN})")
    # Kafka's tool takes the connection options before the subcommand; after it works too.
    for sub in (listing, describe, producers, abort, hanging):
        _connection_options(sub, argparse.SUPPRESS)
    parser.set_defaults(func=run_transactions, bootstrap_server=None,
                        timeout=DEFAULT_TIMEOUT_S, api_timeout_ms=DEFAULT_API_TIMEOUT_MS)


def _connection_options(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT[,HOST:PORT]",
                        default=default, help="the brokers to connect to (required)")
    parser.add_argument("--timeout", type=float, default=default,
                        help=f"seconds per request (default {DEFAULT_TIMEOUT_S:.0f})")
    parser.add_argument("--timeout-ms", dest="api_timeout_ms", type=int, default=default,
                        metavar="MS", help="retry retriable errors of each admin call for "
                        f"this long (default {DEFAULT_API_TIMEOUT_MS})")


def run_transactions(args: argparse.Namespace) -> int:
    from clients.admin import BlockingAdmin, ConfigError
    from clients.net import KafkaConnectionError
    from clients.protocol import KafkaError

    if not args.bootstrap_server:
        raise CommandError("--bootstrap-server is required")
    try:
        with BlockingAdmin({"bootstrap.servers": args.bootstrap_server, "client.id": CLIENT_ID,
                            "request.timeout.ms": int(args.timeout * 1000),
                            "default.api.timeout.ms": api_timeout_ms(args)}) as admin:
            out = _COMMANDS[args.subcommand](admin, args)
    except (ConfigError, KafkaConnectionError, KafkaError, OSError) as exc:
        raise CommandError(str(exc)) from None
    if out:
        sys.stdout.write(out + "\n")
    return 0


def _list(admin: "BlockingAdmin", args: argparse.Namespace) -> str:
    rows = [(t.transactional_id, str(t.coordinator_id), str(t.producer_id), t.state)
            for t in admin.list_transactions()]
    return format_table(LIST_HEADER, rows)


def _describe(admin: "BlockingAdmin", args: argparse.Namespace) -> str:
    from clients.protocol import KafkaError

    tid = args.transactional_id
    found = admin.describe_transactions([tid])[tid]
    if isinstance(found, KafkaError):
        raise CommandError(f"failed to describe transactional id {tid!r}: {found.message}")
    now = wall_clock_ms()
    started = found.start_time_ms
    row = (str(found.coordinator_id), tid, str(found.producer_id), str(found.producer_epoch),
           found.state, str(found.timeout_ms), str(started) if started >= 0 else "None",
           str(now - started) if started >= 0 else "None",
           ",".join(f"{t}-{p}" for t, p in found.partitions))
    return format_table(DESCRIBE_HEADER, [row])


def _producers_of(admin: "BlockingAdmin", topic: str, partition: int,
                  broker_id: int | None = None) -> list["ProducerState"]:
    from clients.protocol import KafkaError

    found = admin.describe_producers([(topic, partition)], broker_id).get((topic, partition))
    where = "leader" if broker_id is None else f"broker {broker_id}"
    if found is None or isinstance(found, KafkaError):
        reason = found.message if found is not None else "no answer for the partition"
        raise CommandError(f"failed to describe producers for partition {topic}-{partition} "
                           f"on {where}: {reason}")
    return found


def _describe_producers(admin: "BlockingAdmin", args: argparse.Namespace) -> str:
    rows = [(str(p.producer_id), str(p.producer_epoch), str(p.coordinator_epoch),
             str(p.last_sequence), str(p.last_timestamp),
             str(p.current_txn_start_offset) if p.current_txn_start_offset >= 0 else "None")
            for p in _producers_of(admin, args.topic, args.partition, args.broker_id)]
    return format_table(PRODUCERS_HEADER, rows)


def _abort_spec(admin: "BlockingAdmin", args: argparse.Namespace) -> "AbortTransactionSpec":
    from clients.admin.transaction_operations import AbortTransactionSpec

    explicit = (args.producer_id, args.producer_epoch, args.coordinator_epoch)
    if args.start_offset is None:
        if None in explicit:
            raise CommandError("abort needs --start-offset, or --producer-id, "
                               "--producer-epoch and --coordinator-epoch")
        return AbortTransactionSpec(args.topic, args.partition, args.producer_id,
                                    args.producer_epoch, max(args.coordinator_epoch, 0))
    if any(v is not None for v in explicit):
        raise CommandError("--start-offset cannot be combined with --producer-id, "
                           "--producer-epoch or --coordinator-epoch")
    matching = [p for p in _producers_of(admin, args.topic, args.partition)
                if p.current_txn_start_offset == args.start_offset]
    if not matching:
        raise CommandError(f"could not find any open transactions starting at offset "
                           f"{args.start_offset} on partition {args.topic}-{args.partition}")
    p = matching[0]
    # A coordinator epoch of -1 (unknown) is sent as 0, as Kafka's tool does.
    return AbortTransactionSpec(args.topic, args.partition, p.producer_id, p.producer_epoch,
                                max(p.coordinator_epoch, 0))


def _abort(admin: "BlockingAdmin", args: argparse.Namespace) -> str:
    admin.abort_transaction(_abort_spec(admin, args))
    return ""


def _partitions_to_search(admin: "BlockingAdmin",
                          args: argparse.Namespace) -> list[tuple[str, int]]:
    """The named partition; else the topic's partitions (or every partition) with a replica
    on --broker-id when it is given."""
    if args.topic is None:
        return admin.partitions_on_broker(args.broker_id)
    if args.partition is not None:
        return [(args.topic, args.partition)]
    (described,) = admin.describe_topics([args.topic])
    return sorted((args.topic, p.partition) for p in described.partitions
                  if args.broker_id is None or args.broker_id in p.replicas)


def _find_hanging(admin: "BlockingAdmin", args: argparse.Namespace) -> str:
    """Kafka's rule: a partition's open transaction older than --max-transaction-timeout is
    hanging when no coordinator lists its producer id, the coordinator no longer knows the
    transactional id, or the coordinator's transaction does not include that partition (so
    no marker will ever reach it)."""
    from clients.protocol import ErrorCode, KafkaError

    if args.broker_id is None and args.topic is None:
        raise CommandError("find-hanging requires either --topic or --broker-id to limit "
                           "the scope of the search")
    if args.partition is not None and args.topic is None:
        raise CommandError("--partition requires --topic")
    partitions = _partitions_to_search(admin, args)
    now = wall_clock_ms()
    limit_ms = args.max_transaction_timeout * 60_000
    candidates = []
    # Each partition's producer state as its leader has it: Raftka's DescribeProducers
    # answers on leaders only, where Kafka's tool asks --broker-id's own replica.
    for tp, found in sorted(admin.describe_producers(partitions).items()):
        if isinstance(found, KafkaError):
            raise CommandError(f"failed to describe producers for partition "
                               f"{tp[0]}-{tp[1]}: {found.message}")
        candidates += [(tp, p) for p in found if p.current_txn_start_offset >= 0
                       and now - p.last_timestamp > limit_ms]
    hanging = []
    if candidates:
        listed = {t.producer_id: t.transactional_id for t in admin.list_transactions(
            producer_id_filters=sorted({p.producer_id for _, p in candidates}))}
        described = admin.describe_transactions(sorted(set(listed.values())))
        for tid, found in described.items():
            if (isinstance(found, KafkaError)
                    and found.code is not ErrorCode.TRANSACTIONAL_ID_NOT_FOUND):
                raise CommandError(f"failed to describe transactional id {tid!r}: "
                                   f"{found.message}")
        for tp, p in candidates:
            txn = described.get(listed.get(p.producer_id, ""))
            if txn is None or isinstance(txn, KafkaError) or tp not in txn.partitions:
                hanging.append((tp, p))
    rows = [(tp[0], str(tp[1]), str(p.producer_id), str(p.producer_epoch),
             str(p.coordinator_epoch), str(p.current_txn_start_offset), str(p.last_timestamp),
             str((now - p.last_timestamp) // 60_000)) for tp, p in hanging]
    return format_table(HANGING_HEADER, rows)


_COMMANDS = {"list": _list, "describe": _describe, "describe-producers": _describe_producers,
             "abort": _abort, "find-hanging": _find_hanging}
