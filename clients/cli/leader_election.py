"""`raftka leader-election`: elect partition leaders, like kafka-leader-election.sh.

`--election-type PREFERRED|UNCLEAN` with exactly one of `--all-topic-partitions`,
`--topic T --partition P`, or `--path-to-json-file F` (Kafka's format:
`{"partitions": [{"topic": "t", "partition": 0}]}`). Output is Kafka's:
`Successfully completed leader election (PREFERRED) for partitions t-0, t-1`,
`Valid replica already elected for partitions t-2`, and per failed partition
`Error completing leader election (PREFERRED) for partition: t-3: ERROR: message`, after
which `Error: N replica(s) could not be elected` goes to stderr and the exit code is 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from clients.cli.admin_tool import ConfigFileAction, add_connection_options, run_admin_tool

CLIENT_ID = "raftka-leader-election"
ERROR_PREFIX = "Error: "
ELECTION_TYPES = ("PREFERRED", "UNCLEAN")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "leader-election", help="elect partition leaders (like kafka-leader-election.sh)")
    add_connection_options(parser)
    parser.add_argument("--admin.config", dest="command_config", metavar="FILE",
                        action=ConfigFileAction, help="the same as --command-config")
    parser.add_argument("--election-type", type=str.upper, choices=ELECTION_TYPES,
                        metavar="PREFERRED|UNCLEAN", help="the kind of election")
    parser.add_argument("--all-topic-partitions", action="store_true",
                        help="elect leaders for every partition")
    parser.add_argument("--topic", metavar="TOPIC", help="the topic of --partition")
    parser.add_argument("--partition", type=int, metavar="PARTITION",
                        help="the partition to elect a leader for (with --topic)")
    parser.add_argument("--path-to-json-file", metavar="FILE",
                        help='{"partitions": [{"topic": "t", "partition": 0}]}')
    parser.set_defaults(func=run)


# ---- pure parsing and formatting ----

def parse_partitions_json(text: str) -> list[tuple[str, int]]:
    """The partitions of Kafka's election JSON, in order; ValueError saying what is wrong."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"The input string is not a valid JSON: {exc}") from None
    entries = document.get("partitions") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise ValueError("Replica election data is missing \"partitions\" field")
    partitions: list[tuple[str, int]] = []
    for entry in entries:
        if (not isinstance(entry, dict) or not isinstance(entry.get("topic"), str)
                or isinstance(entry.get("partition"), bool)
                or not isinstance(entry.get("partition"), int)):
            raise ValueError(f"Replica election data: each partition needs a string \"topic\" "
                             f"and an integer \"partition\" (got {json.dumps(entry)})")
        partitions.append((entry["topic"], entry["partition"]))
    duplicates = sorted({f"{t}-{p}" for t, p in partitions if partitions.count((t, p)) > 1})
    if duplicates:
        raise ValueError("Replica election data contains duplicate partitions: "
                         + ",".join(duplicates))
    if not partitions:
        raise ValueError("Replica election data names no partitions")
    return partitions


def chosen_partitions(args: argparse.Namespace) -> list[tuple[str, int]] | None:
    """The partitions the options name (None: all); ValueError for a bad combination."""
    if args.election_type is None:
        raise ValueError("Missing required option(s) [election-type]")
    sources = [args.all_topic_partitions, args.topic is not None,
               args.path_to_json_file is not None]
    if sum(sources) != 1:
        raise ValueError("One and only one of the following options is required: "
                         "all-topic-partitions, topic, path-to-json-file")
    if args.partition is not None and args.topic is None:
        raise ValueError("Missing required option(s) [topic]")
    if args.topic is not None:
        if args.partition is None:
            raise ValueError("Missing required option(s) [partition]")
        return [(args.topic, args.partition)]
    if args.path_to_json_file is not None:
        from clients.common import properties

        try:
            text = properties.decode_utf8(Path(args.path_to_json_file).read_bytes())
        except OSError as exc:
            raise ValueError(f"cannot read {args.path_to_json_file}: {exc.strerror}") from None
        except ValueError as exc:
            raise ValueError(f"{args.path_to_json_file}: {exc}") from None
        return parse_partitions_json(text)
    return None


def result_lines(election_type: str, results: Sequence[Any]) -> tuple[list[str], list[str]]:
    """Kafka's output lines, and the failed partitions' lines."""
    succeeded = [r for r in results if r.error.name == "NONE"]
    noop = [r for r in results if r.error.name == "ELECTION_NOT_NEEDED"]
    failed = [r for r in results if r.error.name not in ("NONE", "ELECTION_NOT_NEEDED")]

    def names(items: Sequence[Any]) -> str:
        return ", ".join(f"{r.topic}-{r.partition}" for r in items)

    lines = []
    if succeeded:
        lines.append(f"Successfully completed leader election ({election_type}) for "
                     f"partitions {names(succeeded)}")
    if noop:
        lines.append(f"Valid replica already elected for partitions {names(noop)}")
    failures = [f"Error completing leader election ({election_type}) for partition: "
                f"{r.topic}-{r.partition}: {r.error.name}: {r.message or r.error.message}"
                for r in failed]
    return lines + failures, failures


# ---- the command ----

def _execute(args: argparse.Namespace, admin: Any) -> tuple[list[str], int]:
    from clients.admin.cluster_operations import ELECTION_TYPES as TYPE_CODES

    partitions = chosen_partitions(args)
    results = admin.elect_leaders(TYPE_CODES[args.election_type], partitions)
    lines, failures = result_lines(args.election_type, results)
    if failures:
        # Kafka's tool ends with an AdminCommandFailedException naming the count.
        print("\n".join(lines))
        print(f"{ERROR_PREFIX}{len(failures)} replica(s) could not be elected",
              file=sys.stderr)
        return [], 1
    return lines, 0


def run(args: argparse.Namespace) -> int:
    return run_admin_tool(args, CLIENT_ID, _execute, ERROR_PREFIX)
