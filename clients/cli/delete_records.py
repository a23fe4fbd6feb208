"""`raftka delete-records`: move partitions' log start offsets up, like
kafka-delete-records.sh (DeleteRecordsCommand).

The offset JSON file is Kafka's: `{"partitions": [{"topic": "t", "partition": 0, "offset": 3}],
"version": 1}`, offset -1 meaning the high watermark. Output is Kafka's: `Executing records
delete operation`, `Records delete operation completed:`, then `partition: t-0\tlow_watermark:
3` or `partition: t-0\terror: ...` per partition. A partition's error makes the exit code 1;
a bad file or an unreachable cluster prints one `Error: ...` line on stderr and exits 1.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Mapping

from clients.cli.admin_tool import add_connection_options, run_admin_tool

CLIENT_ID = "raftka-delete-records"
ERROR_PREFIX = "Error: "
JSON_VERSION = 1


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "delete-records", help="delete records before given offsets (like "
                               "kafka-delete-records.sh)")
    add_connection_options(parser)
    parser.add_argument("--offset-json-file", required=True, metavar="FILE",
                        help='{"partitions": [{"topic": "t", "partition": 0, "offset": 3}], '
                             '"version": 1}; offset -1 is the high watermark')
    parser.set_defaults(func=run)


# ---- pure parsing and formatting ----

def _whole_number(entry: Mapping[str, Any], key: str) -> int:
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"Offset json file: each partition needs an integer {key!r} "
                         f"(got {json.dumps(entry)})")
    return value


def parse_offset_json(text: str) -> dict[tuple[str, int], int]:
    """{(topic, partition): offset} from Kafka's offset JSON; ValueError saying what is
    wrong."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"The input string is not a valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise ValueError("Offset json file must hold a JSON object with a partitions list")
    version = document.get("version", JSON_VERSION)
    if version != JSON_VERSION:
        raise ValueError(f"Not supported version field value {version}")
    entries = document.get("partitions")
    if not isinstance(entries, list):
        raise ValueError("Offset json file: missing partitions field")
    wanted: dict[tuple[str, int], int] = {}
    duplicates: list[str] = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("topic"), str):
            raise ValueError(f"Offset json file: each partition needs a string 'topic' "
                             f"(got {json.dumps(entry)})")
        tp = (entry["topic"], _whole_number(entry, "partition"))
        offset = _whole_number(entry, "offset")
        if offset < -1:
            raise ValueError(f"Offset json file: invalid offset {offset} for {tp[0]}-{tp[1]} "
                             "(an offset, or -1 for the high watermark)")
        if tp in wanted:
            duplicates.append(f"{tp[0]}-{tp[1]}")
        wanted[tp] = offset
    if duplicates:
        raise ValueError("Offset json file contains duplicate topic partitions: "
                         + ",".join(duplicates))
    if not wanted:
        raise ValueError("Offset json file names no partitions")
    return wanted


def result_lines(results: Mapping[tuple[str, int], Any]) -> list[str]:
    """Kafka's per-partition lines, sorted by topic and partition."""
    lines = []
    for (topic, partition), result in sorted(results.items()):
        if isinstance(result, Exception):
            message = getattr(result, "message", str(result))
            code = getattr(getattr(result, "code", None), "name", type(result).__name__)
            lines.append(f"partition: {topic}-{partition}\terror: {code}: {message}")
        else:
            lines.append(f"partition: {topic}-{partition}\tlow_watermark: {result}")
    return lines


# ---- the command ----

def _execute(args: argparse.Namespace, admin: Any) -> tuple[list[str], int]:
    from clients.common import properties

    try:
        text = properties.decode_utf8(Path(args.offset_json_file).read_bytes())
    except OSError as exc:
        raise ValueError(f"cannot read {args.offset_json_file}: {exc.strerror}") from None
    except ValueError as exc:
        raise ValueError(f"{args.offset_json_file}: {exc}") from None
    results = admin.delete_records(parse_offset_json(text))
    failed = any(isinstance(r, Exception) for r in results.values())
    return (["Executing records delete operation", "Records delete operation completed:",
             *result_lines(results)], 1 if failed else 0)


def run(args: argparse.Namespace) -> int:
    return run_admin_tool(args, CLIENT_ID, _execute, ERROR_PREFIX)
