"""`raftka get-offsets`: partition offsets by time, like kafka-get-offsets.sh (GetOffsetShell).

Prints `topic:partition:offset` per matching partition, sorted; a partition with no record
for the time asked is left out, and one whose leader answers with an error is skipped with a
line on stderr, as Kafka's tool does. Errors print `Error occurred: <message>` and exit 1.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, Iterable, Mapping

from clients.cli.admin_tool import add_connection_options, run_admin_tool

ERROR_PREFIX = "Error occurred: "
CLIENT_ID = "raftka-get-offsets"
# Kafka 3.x's names for the special times, besides their numbers.
NAMED_TIMES = {"latest": -1, "earliest": -2, "max-timestamp": -3}
NO_MATCH = "Could not match any topic-partitions with the specified filters"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "get-offsets", help="print partition offsets by time (like kafka-get-offsets.sh)")
    add_connection_options(parser)
    parser.add_argument("--topic", metavar="REGEX",
                        help="topics to query, a regular expression matching whole names "
                             "(default: every topic)")
    parser.add_argument("--partitions", metavar="IDS",
                        help="partition ids and inclusive ranges to query, e.g. 0,2-3 "
                             "(default: all); only with --topic")
    parser.add_argument("--time", default="-1", metavar="TIME",
                        help="-1 or latest (the high watermark), -2 or earliest, -3 or "
                             "max-timestamp, or a timestamp in ms: the first offset whose "
                             "record is at or after it (default: -1)")
    parser.add_argument("--exclude-internal-topics", action="store_true",
                        help="leave out internal topics")
    parser.set_defaults(func=run)


# ---- pure parsing and formatting ----

def parse_time(text: str) -> int:
    """A --time value as ListOffsets' timestamp."""
    named = NAMED_TIMES.get(text.strip().lower())
    if named is not None:
        return named
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < -3:
        raise ValueError(f"Malformed time argument {text}. Please use -1 or latest / -2 or "
                         "earliest / -3 or max-timestamp, or a specified long format "
                         "timestamp")
    return value


def parse_partitions(text: str) -> set[int]:
    """`0,2-3` as {0, 2, 3}: partition ids and inclusive ranges."""
    wanted: set[int] = set()
    for item in (part.strip() for part in text.split(",")):
        low, sep, high = item.partition("-")
        try:
            first = int(low)
            last = int(high) if sep else first
        except ValueError:
            first, last = -1, -2
        if first < 0 or last < first:
            raise ValueError(f"Invalid partition filter '{item}' in --partitions {text}: "
                             "expected partition ids or ranges like 0,2-3")
        wanted.update(range(first, last + 1))
    return wanted


def offset_lines(offsets: Mapping[tuple[str, int], Any]) -> list[str]:
    """`topic:partition:offset` lines, sorted, for partitions with an offset."""
    return [f"{topic}:{partition}:{found.offset}"
            for (topic, partition), found in sorted(offsets.items())
            if found is not None and not isinstance(found, Exception)]


def select_partitions(described: Iterable[Any], pattern: re.Pattern[str],
                      wanted: set[int] | None, exclude_internal: bool
                      ) -> list[tuple[str, int]]:
    """The (topic, partition)s of the described topics that the filters select, sorted."""
    from clients.cli.topic_pattern import matching_topics

    described = list(described)
    names = set(matching_topics(pattern, [d.name for d in described], exclude_internal,
                                [d.name for d in described if d.is_internal]))
    return sorted((d.name, p.partition) for d in described if d.name in names
                  for p in d.partitions if wanted is None or p.partition in wanted)


# ---- the command ----

def _execute(args: argparse.Namespace, admin: Any) -> list[str]:
    from clients.cli.topic_pattern import compile_topic_pattern

    if args.partitions is not None and not args.topic:
        raise ValueError("--partitions can only be used with --topic")
    timestamp = parse_time(args.time)
    pattern = compile_topic_pattern(args.topic if args.topic else ".*")
    wanted = None if args.partitions is None else parse_partitions(args.partitions)
    partitions = select_partitions(admin.describe_topics(), pattern, wanted,
                                   args.exclude_internal_topics)
    if not partitions:
        raise ValueError(NO_MATCH)
    offsets = admin.list_offsets({tp: timestamp for tp in partitions})
    for (topic, partition), found in sorted(offsets.items()):
        if isinstance(found, Exception):
            print(f"Skip getting offsets for topic-partition {topic}-{partition} due to "
                  f"error: {getattr(found, 'message', found)}", file=sys.stderr)
    return offset_lines(offsets)


def run(args: argparse.Namespace) -> int:
    return run_admin_tool(args, CLIENT_ID, _execute, ERROR_PREFIX)
