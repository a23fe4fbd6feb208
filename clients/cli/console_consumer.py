"""`raftka console-consumer`: print a topic's records, like kafka-console-consumer.sh.

Without `--partition` every partition of the topic is assigned; consumption starts at the
end unless `--from-beginning` (or `--offset` with `--partition`). Output follows Kafka's
DefaultMessageFormatter: [CreateTime:ts][Partition:p][Offset:o][key] value, fields joined by
`key.separator` (TAB). With `--group G` the consumer joins group G (subscribe) instead and
starts at the group's committed offsets (else at the beginning with `--from-beginning`,
the end without); what it printed is committed as it goes (auto-commit) and on exit, so the
next run in the group resumes after it. At the end `Processed a total of N messages` goes
to stderr; `--timeout-ms` ends the run when no record arrives for that long.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, BinaryIO

from clients.cli.admin_tool import add_command_config, command_config
from clients.cli.main import CommandError
from clients.cli.properties import parse_pairs, unescape

CLIENT_ID = "console-consumer"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "console-consumer", help="print records of a topic (like kafka-console-consumer.sh)")
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--from-beginning", action="store_true")
    parser.add_argument("--partition", type=int)
    parser.add_argument("--offset", default=None,
                        help="an offset, earliest or latest (needs --partition)")
    parser.add_argument("--max-messages", type=int, metavar="N",
                        help="exit after N records; -1, the default, means no limit")
    parser.add_argument("--timeout-ms", type=int)
    parser.add_argument("--group")
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                        help="formatter properties: print.key, print.value, print.partition, "
                             "print.offset, print.timestamp, print.headers, key.separator, "
                             "line.separator, headers.separator, headers.key.separator")
    parser.add_argument("--consumer-property", action="append", default=[],
                        metavar="KEY=VALUE", help="a consumer setting (repeatable)")
    add_command_config(parser, "--consumer.config")
    parser.set_defaults(func=run)


def record_limit(max_messages: int | None) -> int | None:
    """``--max-messages`` as a limit: None (no limit) when absent or -1, Kafka's default;
    below -1 is an error."""
    if max_messages is not None and max_messages < -1:
        raise CommandError(f"--max-messages {max_messages}: expected a count, or -1 for no "
                           "limit")
    return None if max_messages == -1 else max_messages


class MessageFormatter:
    """Kafka's DefaultMessageFormatter, for the properties it documents most."""

    def __init__(self, properties: dict[str, str]) -> None:
        def flag(name: str, default: bool = False) -> bool:
            return properties.get(name, str(default)).lower() == "true"

        self.print_timestamp = flag("print.timestamp")
        self.print_partition = flag("print.partition")
        self.print_offset = flag("print.offset")
        self.print_headers = flag("print.headers")
        self.print_key = flag("print.key")
        self.print_value = flag("print.value", True)
        self.key_separator = unescape(properties.get("key.separator", "\t")).encode()
        self.line_separator = unescape(properties.get("line.separator", "\n")).encode()
        self.headers_separator = unescape(properties.get("headers.separator", ",")).encode()
        self.headers_key_separator = unescape(
            properties.get("headers.key.separator", ":")).encode()

    def format(self, record: Any) -> bytes:
        parts: list[bytes] = []
        if self.print_timestamp:
            if record.timestamp >= 0:
                parts.append(f"{record.timestamp_type_name}:{record.timestamp}".encode())
            else:
                parts.append(b"NO_TIMESTAMP")
        if self.print_partition:
            parts.append(f"Partition:{record.partition}".encode())
        if self.print_offset:
            parts.append(f"Offset:{record.offset}".encode())
        if self.print_headers:
            parts.append(self._headers(record.headers))
        if self.print_key:
            parts.append(b"null" if record.key is None else record.key)
        if self.print_value:
            parts.append(b"null" if record.value is None else record.value)
        return self.key_separator.join(parts) + self.line_separator

    def _headers(self, headers: Any) -> bytes:
        """``k1:v1,k2:v2`` (a null value prints as null), or NO_HEADERS."""
        if not headers:
            return b"NO_HEADERS"
        return self.headers_separator.join(
            name.encode() + self.headers_key_separator + (b"null" if value is None else value)
            for name, value in headers)


async def _consume(args: argparse.Namespace, config: dict[str, Any],
                   formatter: MessageFormatter, out: BinaryIO) -> int:
    import trio

    from clients.consumer import CommitFailedError, Consumer

    processed = 0
    async with Consumer(config) as consumer, trio.open_nursery() as nursery:
        stop = trio.CancelScope()
        nursery.start_soon(_stop_on_signal, stop)
        if args.group is not None:
            consumer.subscribe([args.topic])
        else:
            partitions = await consumer.partitions_for(args.topic)
            if args.partition is not None:
                if args.partition not in partitions:
                    raise CommandError(
                        f"--partition {args.partition}: topic {args.topic!r} has no partition "
                        f"{args.partition} (its partitions are 0 to {len(partitions) - 1})")
                partitions = [args.partition]
            _assign(consumer, args, partitions)
        idle_deadline = None if args.timeout_ms is None else \
            trio.current_time() + args.timeout_ms / 1000
        try:
            with stop:
                while args.max_messages is None or processed < args.max_messages:
                    wait_ms = 1000.0
                    if idle_deadline is not None:
                        wait_ms = max((idle_deadline - trio.current_time()) * 1000, 0)
                    limit = None if args.max_messages is None else args.max_messages - processed
                    records = await consumer.poll(wait_ms, max_records=limit)
                    if records:
                        out.write(b"".join(formatter.format(r) for r in records))
                        out.flush()
                        processed += len(records)
                        if args.timeout_ms is not None:
                            idle_deadline = trio.current_time() + args.timeout_ms / 1000
                    elif idle_deadline is not None and trio.current_time() >= idle_deadline:
                        break
            if args.group is not None:
                # Everything printed is consumed: commit it before leaving the group.
                try:
                    await consumer.commit()
                except CommitFailedError as exc:
                    print(f"WARN {exc}", file=sys.stderr)
        finally:
            nursery.cancel_scope.cancel()
            print(f"Processed a total of {processed} messages", file=sys.stderr)
    return 0


async def _stop_on_signal(stop: Any) -> None:
    """SIGINT or SIGTERM ends the poll loop, so the consumer commits and leaves its group
    (Kafka's console consumer closes from its shutdown hook); a second signal stops at once."""
    import signal

    import trio

    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            if stop.cancel_called:
                raise KeyboardInterrupt
            stop.cancel()


def _assign(consumer: Any, args: argparse.Namespace, partitions: list[int]) -> None:
    tps = [(args.topic, p) for p in partitions]
    consumer.assign(tps)
    offset = args.offset
    if offset is None:
        offset = "earliest" if args.from_beginning else "latest"
    if offset == "earliest":
        consumer.seek_to_beginning(tps)
    elif offset == "latest":
        consumer.seek_to_end(tps)
    else:
        consumer.seek(tps[0], int(offset))


def run(args: argparse.Namespace) -> int:
    import trio

    args.max_messages = record_limit(args.max_messages)
    if args.group is not None and args.partition is not None:
        raise CommandError("Options group and partition cannot be specified together.")
    if args.offset is not None and args.partition is None:
        raise CommandError("The partition is required when offset is specified.")
    if args.offset not in (None, "earliest", "latest") and not args.offset.isdigit():
        raise CommandError(f"--offset {args.offset!r}: the offset must be a non-negative "
                           "number, earliest or latest")
    config: dict[str, Any] = {"client.id": CLIENT_ID}
    config.update(command_config(args))
    config.update(parse_pairs(args.consumer_property, "--consumer-property"))
    config["bootstrap.servers"] = args.bootstrap_server
    if args.group is not None:
        config["group.id"] = args.group
        # Committed offsets win; this only decides where a new group starts. As in
        # Kafka's tool, a value the user set is kept, and --from-beginning asks for
        # earliest (contradicting it is an error).
        if args.from_beginning:
            if config.setdefault("auto.offset.reset", "earliest") != "earliest":
                raise CommandError("Found conflicting configs: auto.offset.reset="
                                   f"{config['auto.offset.reset']} and --from-beginning")
        else:
            config.setdefault("auto.offset.reset", "latest")
    formatter = MessageFormatter(parse_pairs(args.property, "--property"))
    try:
        return trio.run(_consume, args, config, formatter, sys.stdout.buffer)
    except KeyboardInterrupt:
        return 0  # Ctrl-C is how a console consumer is meant to end
