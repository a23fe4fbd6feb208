"""`raftka producer-perf-test`: produce N records as fast as allowed and print
kafka-producer-perf-test.sh's lines (a 5-second window line, then the totals with latency
percentiles), with Raftka's own producer."""

from __future__ import annotations

import argparse
import random
import sys
import uuid
from pathlib import Path
from typing import Any

from clients.cli.main import CommandError
from clients.cli.perf_stats import ProducerStats, ThroughputPacer, metrics_lines
from clients.clock import wall_clock_ms

CLIENT_ID = "perf-producer-client"
DEFAULT_TRANSACTION_ID_PREFIX = "performance-producer-"
DEFAULT_TRANSACTION_DURATION_MS = 3000
# Payload bytes are uppercase letters, as Kafka's tool writes them.
_LETTERS = bytes(65 + b % 26 for b in range(256))


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "producer-perf-test", help="measure producer throughput and latency (like "
                                   "kafka-producer-perf-test.sh)")
    parser.add_argument("--topic", required=True, help="produce records to this topic")
    parser.add_argument("--num-records", type=int, required=True, metavar="NUM-RECORDS",
                        help="number of records to produce")
    payload = parser.add_mutually_exclusive_group(required=True)
    payload.add_argument("--record-size", type=int, metavar="RECORD-SIZE",
                         help="record size in bytes (random uppercase letters)")
    payload.add_argument("--payload-file", metavar="PAYLOAD-FILE",
                         help="UTF-8 file of payloads, one picked at random per record")
    payload.add_argument("--payload-monotonic", action="store_true",
                         help="the payload is the record's number")
    parser.add_argument("--payload-delimiter", default="\\n", metavar="PAYLOAD-DELIMITER",
                        help="the delimiter of --payload-file's payloads (default: newline)")
    parser.add_argument("--throughput", type=float, required=True, metavar="THROUGHPUT",
                        help="at most this many records a second; -1 for no limit")
    parser.add_argument("--producer-props", nargs="+", metavar="PROP-NAME=PROP-VALUE",
                        help="producer settings (bootstrap.servers, acks, ...); they win over "
                             "--producer.config")
    parser.add_argument("--producer.config", dest="producer_config", metavar="CONFIG-FILE",
                        help="a producer properties file")
    parser.add_argument("--print-metrics", action="store_true",
                        help="print the producer's metrics at the end")
    parser.add_argument("--transactional-id", metavar="TRANSACTIONAL-ID",
                        help="produce in transactions with this transactional id")
    parser.add_argument("--transaction-duration-ms", type=int, metavar="TRANSACTION-DURATION",
                        help="commit a transaction after this long (default 3000 when "
                             "transactions are on)")
    parser.add_argument("--warmup-records", type=int, default=0, metavar="WARMUP-RECORDS",
                        help="leave the first records out of a second, steady-state summary")
    parser.set_defaults(func=run)


def producer_settings(args: argparse.Namespace) -> dict[str, str]:
    """--producer.config, then --producer-props (each exactly KEY=VALUE, as Kafka)."""
    from clients.cli.admin_tool import read_config_file

    if not args.producer_props and not args.producer_config:
        raise CommandError("Either --producer-props or --producer.config must be specified.")
    settings = read_config_file(args.producer_config, "--producer.config") \
        if args.producer_config else {}
    for prop in args.producer_props or ():
        pieces = prop.split("=")
        if len(pieces) != 2:
            raise CommandError(f"Invalid property: {prop}")
        settings[pieces[0]] = pieces[1]
    settings.setdefault("client.id", CLIENT_ID)
    return settings


def check_arguments(args: argparse.Namespace) -> None:
    if args.num_records <= 0:
        raise CommandError("--num-records should be greater than zero")
    if args.warmup_records >= args.num_records:
        raise CommandError("The value for --warmup-records must be strictly fewer than the "
                           "number of records in the test, --num-records.")
    if args.record_size is not None and args.record_size <= 0:
        raise CommandError("--record-size should be greater than zero")
    if args.transaction_duration_ms is not None and args.transaction_duration_ms <= 0:
        raise CommandError("--transaction-duration-ms should be greater than zero")
    if args.throughput == 0:
        raise CommandError("--throughput must be positive, or -1 for no limit")


def read_payloads(path: str, delimiter: str) -> list[bytes]:
    file = Path(path)
    print(f"Reading payloads from: {file.absolute()}")
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"--payload-file {path}: {exc}") from None
    if not text:
        raise CommandError("File does not exist or empty file provided.")
    payloads = [p.encode() for p in text.split(delimiter) if p]
    print(f"Number of messages read: {len(payloads)}")
    return payloads


class Payloads:
    """Each record's value, as Kafka's tool picks it (seeded: runs are repeatable)."""

    def __init__(self, args: argparse.Namespace, from_file: list[bytes]) -> None:
        self._random = random.Random(0)
        self._size = args.record_size
        self._from_file = from_file
        self._monotonic = args.payload_monotonic

    def next(self, number: int) -> bytes:
        if self._from_file:
            return self._from_file[self._random.randrange(len(self._from_file))]
        if self._size is not None:
            return self._random.randbytes(self._size).translate(_LETTERS)
        return str(number).encode()


def run(args: argparse.Namespace) -> int:
    import trio

    check_arguments(args)
    delimiter = "\n" if args.payload_delimiter == "\\n" else args.payload_delimiter
    from_file = read_payloads(args.payload_file, delimiter) if args.payload_file else []
    settings: dict[str, Any] = producer_settings(args)
    transactional = (args.transaction_duration_ms is not None
                     or args.transactional_id is not None or "transactional.id" in settings)
    duration_ms = args.transaction_duration_ms
    if transactional:
        settings["transactional.id"] = (args.transactional_id or settings.get(
            "transactional.id") or DEFAULT_TRANSACTION_ID_PREFIX + str(uuid.uuid4()))
        duration_ms = duration_ms or DEFAULT_TRANSACTION_DURATION_MS
    return trio.run(_produce, args, settings, Payloads(args, from_file), duration_ms)


async def _produce(args: argparse.Namespace, settings: dict[str, Any], payloads: Payloads,
                   transaction_ms: int | None) -> int:
    import trio

    from clients.producer import open_producer

    if args.warmup_records > 0:
        print(f"Warmup first {args.warmup_records} records. Steady state results will print "
              "after the complete test summary.")
    stats = ProducerStats(args.num_records, wall_clock_ms())
    steady: list[ProducerStats] = []
    failures: list[BaseException] = []

    def on_done(sent_ms: int, size: int) -> Any:
        def done(future: Any) -> None:
            error = future.exception()
            if error is not None:
                if not failures:
                    print(f"Error when sending a record to {args.topic}: {error}",
                          file=sys.stderr)
                failures.append(error)
                return
            now = wall_clock_ms()
            lines = stats.record(now - sent_ms, size, now)
            for s in steady:
                lines += s.record(now - sent_ms, size, now)
            if lines:
                print("\n".join(lines), flush=True)
        return done

    pacer = ThroughputPacer(args.throughput, trio.current_time())
    async with open_producer(settings) as producer:
        if transaction_ms is not None:
            await producer.init_transactions()
        in_transaction, transaction_start = False, 0
        for number in range(args.num_records):
            payload = payloads.next(number)
            if transaction_ms is not None and not in_transaction:
                await producer.begin_transaction()
                in_transaction, transaction_start = True, wall_clock_ms()
            sent_ms = wall_clock_ms()
            if args.warmup_records > 0 and number == args.warmup_records:
                steady.append(ProducerStats(args.num_records - args.warmup_records, sent_ms,
                                            steady_state=True))
                stats.print_windows = False
            future = await producer.send(args.topic, payload)
            future.add_callback(on_done(sent_ms, len(payload)))
            if in_transaction and sent_ms - transaction_start >= (transaction_ms or 0):
                await producer.commit_transaction()
                in_transaction = False
            wait = pacer.delay(number + 1, trio.current_time())
            if wait > 0:
                await trio.sleep(wait)
        if in_transaction:
            await producer.commit_transaction()
        await producer.flush()
    end = wall_clock_ms()
    print(stats.total_line(end))
    for s in steady:
        print(s.total_line(end))
    if args.print_metrics:
        print("\n".join(_metrics(stats, settings["client.id"], end, len(failures))))
    if failures:
        print(f"{len(failures)} of {args.num_records} records failed", file=sys.stderr)
        return 1
    return 0


def _metrics(stats: ProducerStats, client_id: str, end_ms: int, errors: int
             ) -> list[str]:
    """The counters this tool keeps, named as Kafka's producer-metrics group names them."""
    elapsed_s = max(0.001, (end_ms - stats.start_ms) / 1000)
    tag = f"{{client-id={client_id}}}"
    return metrics_lines({
        f"producer-metrics:record-send-total:{tag}": stats.count,
        f"producer-metrics:record-send-rate:{tag}": stats.count / elapsed_s,
        f"producer-metrics:record-error-total:{tag}": errors,
        f"producer-metrics:outgoing-byte-total:{tag}": stats.bytes,
        f"producer-metrics:request-latency-avg:{tag}":
            stats.total_latency / stats.count if stats.count else 0.0,
        f"producer-metrics:request-latency-max:{tag}": stats.max_latency,
    })
