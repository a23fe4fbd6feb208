"""`raftka consumer-perf-test`: consume N records as a group member and print
kafka-consumer-perf-test.sh's CSV lines, with Raftka's own consumer."""

from __future__ import annotations

import argparse
import random
import re
from typing import Any

from clients.cli.main import CommandError
from clients.cli.perf_stats import (
    CONSUMER_DETAILED_HEADER,
    CONSUMER_HEADER,
    DEFAULT_DATE_FORMAT,
    check_date_format,
    consumer_progress_line,
    consumer_total_line,
    metrics_lines,
)
from clients.clock import wall_clock_ms

CLIENT_ID = "perf-consumer-client"
DEFAULT_TIMEOUT_MS = 10_000
DEFAULT_REPORTING_INTERVAL_MS = 5000
DEFAULT_FETCH_SIZE = 1024 * 1024
POLL_MS = 100


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "consumer-perf-test", help="measure consumer throughput (like "
                                   "kafka-consumer-perf-test.sh)")
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]")
    topics = parser.add_mutually_exclusive_group(required=True)
    topics.add_argument("--topic", help="the topic to consume")
    topics.add_argument("--include", metavar="REGEX",
                        help="consume the topics whose names match (as they exist at start)")
    parser.add_argument("--messages", type=int, required=True, metavar="COUNT",
                        help="the number of records to consume")
    parser.add_argument("--group", default=f"perf-consumer-{random.randrange(100_000)}",
                        metavar="GID", help="the group id (default perf-consumer-<random>)")
    parser.add_argument("--fetch-size", type=int, default=DEFAULT_FETCH_SIZE, metavar="SIZE",
                        help="max.partition.fetch.bytes (default 1048576)")
    parser.add_argument("--from-latest", action="store_true",
                        help="without committed offsets, start at the end, not the beginning")
    parser.add_argument("--socket-buffer-size", type=int, metavar="SIZE",
                        help="accepted for compatibility; the consumer sizes its buffers")
    parser.add_argument("--consumer.config", dest="consumer_config", metavar="CONFIG-FILE",
                        help="a consumer properties file")
    parser.add_argument("--print-metrics", action="store_true",
                        help="print the consumer's metrics at the end")
    parser.add_argument("--show-detailed-stats", action="store_true",
                        help="print a line every --reporting-interval")
    parser.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_MS, metavar="MS",
                        help="give up when no record arrives for this long (default 10000)")
    parser.add_argument("--reporting-interval", type=int,
                        default=DEFAULT_REPORTING_INTERVAL_MS, metavar="INTERVAL_MS",
                        help="the --show-detailed-stats interval (default 5000)")
    parser.add_argument("--date-format", default=DEFAULT_DATE_FORMAT, metavar="FORMAT",
                        help=f"how times are printed (default {DEFAULT_DATE_FORMAT})")
    parser.add_argument("--hide-header", action="store_true", help="skip the header line")
    parser.set_defaults(func=run)


def consumer_settings(args: argparse.Namespace) -> dict[str, Any]:
    """--consumer.config, then what the tool sets, as Kafka's tool does."""
    from clients.cli.admin_tool import read_config_file

    settings: dict[str, Any] = read_config_file(args.consumer_config, "--consumer.config") \
        if args.consumer_config else {}
    settings.update({
        "bootstrap.servers": args.bootstrap_server, "group.id": args.group,
        "max.partition.fetch.bytes": args.fetch_size,
        "auto.offset.reset": "latest" if args.from_latest else "earliest",
        "check.crcs": False})
    settings.setdefault("client.id", CLIENT_ID)
    return settings


def run(args: argparse.Namespace) -> int:
    import trio

    if args.messages <= 0:
        raise CommandError("--messages must be greater than zero")
    if args.reporting_interval <= 0:
        raise CommandError("Reporting interval must be greater than 0.")
    problem = check_date_format(args.date_format)
    if problem:
        raise CommandError(f"--date-format {args.date_format!r}: {problem}")
    if args.include is not None:
        try:
            re.compile(args.include)
        except re.error as exc:
            raise CommandError(f"--include {args.include!r}: {exc}") from None
    settings = consumer_settings(args)  # a bad --consumer.config fails before any output
    if not args.hide_header:
        print(CONSUMER_DETAILED_HEADER if args.show_detailed_stats else CONSUMER_HEADER,
              flush=True)
    return trio.run(_consume, args, settings, resolve_topics(args, settings))


class _JoinTimer:
    """The rebalance time: from (re)joining until partitions are assigned again."""

    def __init__(self, start_ms: int) -> None:
        self.join_start_ms = start_ms
        self.total_ms = 0
        self.this_round_ms = 0
        self.assigned: set[tuple[str, int]] = set()

    def on_revoke(self, partitions: list[tuple[str, int]]) -> None:
        self.assigned -= set(partitions)
        if not self.assigned:
            self.join_start_ms = wall_clock_ms()

    def on_assign(self, partitions: list[tuple[str, int]]) -> None:
        if not self.assigned:
            elapsed = wall_clock_ms() - self.join_start_ms
            self.total_ms += elapsed
            self.this_round_ms += elapsed
        self.assigned |= set(partitions)


def resolve_topics(args: argparse.Namespace, settings: dict[str, Any]) -> list[str]:
    """--topic, or the existing topics --include matches (asked with the admin client)."""
    if args.topic is not None:
        return [args.topic]
    from clients.admin import BlockingAdmin

    pattern = re.compile(args.include)
    wanted = ("bootstrap.servers", "client.id", "security.protocol")
    admin_settings = {k: v for k, v in settings.items()
                      if k in wanted or k.startswith(("ssl.", "sasl."))}
    with BlockingAdmin(admin_settings) as admin:
        names = [t for t in admin.list_topics() if pattern.fullmatch(t)]
    if not names:
        raise CommandError(f"no topic matches --include {args.include!r}")
    return sorted(names)


async def _consume(args: argparse.Namespace, settings: dict[str, Any],
                   topics: list[str]) -> int:
    from clients.consumer import Consumer

    start_ms = wall_clock_ms()
    timer = _JoinTimer(start_ms)
    messages = bytes_read = last_messages = last_bytes = 0
    async with Consumer(settings) as consumer:
        consumer.subscribe(topics, on_assign=timer.on_assign,
                           on_revoke=timer.on_revoke)
        now = last_report = last_consumed = wall_clock_ms()
        while messages < args.messages and now - last_consumed <= args.timeout:
            records = await consumer.poll(POLL_MS)
            now = wall_clock_ms()
            if records:
                last_consumed = now
            for record in records:
                messages += 1
                bytes_read += len(record.key or b"") + len(record.value or b"")
                if now - last_report >= args.reporting_interval:
                    if args.show_detailed_stats:
                        print(consumer_progress_line(
                            bytes_read, last_bytes, messages, last_messages, last_report, now,
                            timer.this_round_ms, args.date_format), flush=True)
                    timer.this_round_ms = 0
                    last_report, last_messages, last_bytes = now, messages, bytes_read
        end_ms = wall_clock_ms()
    if messages < args.messages:
        print(f"WARNING: Exiting before consuming the expected number of messages: timeout "
              f"({args.timeout} ms) exceeded. You can use the --timeout option to increase "
              "the timeout.")
    if not args.show_detailed_stats:
        print(consumer_total_line(start_ms, end_ms, bytes_read, messages, timer.total_ms,
                                  args.date_format))
    if args.print_metrics:
        elapsed_s = max(0.001, (end_ms - start_ms) / 1000)
        tag = f"{{client-id={settings['client.id']}}}"
        print("\n".join(metrics_lines({
            f"consumer-fetch-manager-metrics:records-consumed-total:{tag}": messages,
            f"consumer-fetch-manager-metrics:records-consumed-rate:{tag}": messages / elapsed_s,
            f"consumer-fetch-manager-metrics:bytes-consumed-total:{tag}": bytes_read,
            f"consumer-fetch-manager-metrics:bytes-consumed-rate:{tag}": bytes_read / elapsed_s,
            f"consumer-coordinator-metrics:rebalance-latency-total:{tag}": timer.total_ms,
        })))
    return 0
